import type { JWTPayload } from 'jose';
import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { TrackingUsersTable } from '../db/schema/tracking.ts';

export type TrackingUser = Selectable<TrackingUsersTable>;

/** Who calls the tracking service: the account behind a verified token. */
export interface TrackingIdentity {
  accountId: string;
  /** The account's ldid: the tracking user's id. */
  ldid: string;
  claims: JWTPayload;
}

const GENDERS = new Set([0, 1, 2]);

/** The User fields a token's claims give, each kept only when well formed. */
export function profileFromClaims(
  claims: JWTPayload,
): Partial<Pick<TrackingUser, 'gender' | 'birth_date' | 'country' | 'language'>> {
  const out: Partial<Pick<TrackingUser, 'gender' | 'birth_date' | 'country' | 'language'>> = {};
  const gender = Number(claims.gender);
  if (claims.gender !== undefined && claims.gender !== null && GENDERS.has(gender)) out.gender = gender;
  if (typeof claims.birthdate === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(claims.birthdate))
    out.birth_date = claims.birthdate;
  if (typeof claims.country === 'string' && /^[A-Za-z]{2}$/.test(claims.country))
    out.country = claims.country.toUpperCase();
  const language =
    typeof claims.language === 'string'
      ? claims.language
      : typeof claims.locale === 'string'
        ? claims.locale
        : undefined;
  if (language && /^[A-Za-z]{2}([-_].*)?$/.test(language)) out.language = language.slice(0, 2).toLowerCase();
  return out;
}

/**
 * The caller's tracking user, created on their first call from the token's claims (completed by
 * their account's profile); later calls only read. Concurrent first calls make one row.
 */
export async function ensureTrackingUser(db: Db, identity: TrackingIdentity): Promise<TrackingUser> {
  const existing = await db.selectFrom('tracking_users').selectAll().where('id', '=', identity.ldid).executeTakeFirst();
  if (existing) return existing;
  const account = await db
    .selectFrom('accounts')
    .select(['gender', 'birth_date', 'country', 'language', 'image_url'])
    .where('id', '=', identity.accountId)
    .executeTakeFirstOrThrow();
  const claims = profileFromClaims(identity.claims);
  await db
    .insertInto('tracking_users')
    .values({
      id: identity.ldid,
      account_id: identity.accountId,
      one_id: null,
      gender: claims.gender ?? account.gender,
      birth_date: claims.birth_date ?? account.birth_date,
      country:
        claims.country ??
        (account.country && /^[A-Z]{2}$/i.test(account.country) ? account.country.toUpperCase() : null),
      language:
        claims.language ??
        (account.language && /^[a-z]{2}/i.test(account.language) ? account.language.slice(0, 2).toLowerCase() : null),
      image_url: account.image_url,
      schedule_delete: null,
      updated_at: sql<Date>`now()`,
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  return db.selectFrom('tracking_users').selectAll().where('id', '=', identity.ldid).executeTakeFirstOrThrow();
}
