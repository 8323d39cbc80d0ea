import type { Db } from '../db/database.ts';
import type { PersonalDataFormat, PersonalDataSection } from '../kernel/registration.ts';
import { type Account, findAccountById } from './accounts.ts';
import { type Consent, listConsents } from './consents.ts';

/**
 * The accounts service's members of the personal data export's `profile.json`
 * (docs/accounts-lifecycle.md): the account as this service knows the person (no secret), and
 * the applications the user allowed.
 */

/** The account behind the tracking user: what the accounts service holds of the person (no secret). */
export const accountFields = (a: Account, external: { issuer: string | null }, format: PersonalDataFormat) => ({
  id: a.id,
  email: a.email,
  firstName: a.first_name,
  lastName: a.last_name,
  gender: a.gender,
  birthDate: a.birth_date,
  language: a.language,
  country: a.country,
  imageUrl: a.image_url,
  roles: a.roles,
  createdVia: a.created_via,
  externalIssuer: external.issuer,
  createdAt: format.dateTime(a.created_at),
  updatedAt: format.dateTime(a.updated_at),
});

/** An application the user allowed (their live consents). */
export const consentFields = (c: Consent, format: PersonalDataFormat) => ({
  clientId: c.clientId,
  clientName: c.clientName,
  scopes: c.scopes,
  grantedAt: format.dateTime(c.grantedAt),
});

/** `account` and `applications`. */
export const accountPersonalData: PersonalDataSection = async (db: Db, accountId, format) => {
  const account = await findAccountById(db, accountId);
  if (!account) throw new Error(`account ${accountId} not found`);
  const external = await db
    .selectFrom('accounts')
    .select('external_issuer')
    .where('id', '=', account.id)
    .executeTakeFirstOrThrow();
  return {
    account: accountFields(account, { issuer: external.external_issuer }, format),
    applications: (await listConsents(db, account.id)).map((c) => consentFields(c, format)),
  };
};
