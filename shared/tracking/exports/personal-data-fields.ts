import type { Selectable } from 'kysely';
import type { Account } from '../../accounts/accounts.ts';
import type { Consent } from '../../accounts/consents.ts';
import type { ShareActivitiesTable } from '../../db/schema/shares.ts';
import { formatDateTime } from '../dates.ts';
import { iri, TRACKING_PREFIX } from '../iri.ts';

/**
 * The members of the personal data export's JSON files that no API view has: a share as listed
 * there with its activity's IRI, and the account's profile as the accounts service knows it.
 * Measures, records and devices use their views' own (measure-fields.ts, record-fields.ts,
 * device-fields.ts).
 */

/**
 * A ShareActivity: its members as GET /v2/share_activities lists them, with the activity named by
 * its IRI (the activity itself is in the archive). `url` is the public page (api/tracking/share-link.ts).
 */
export const shareFields = (s: Selectable<ShareActivitiesTable>, publicUrl: string) => ({
  id: s.token,
  user: iri('users', s.user_id),
  url: `${publicUrl}${TRACKING_PREFIX}/share_activities/${s.token}/page`,
  activity: iri('activities', s.activity_id),
  createdAt: formatDateTime(s.created_at),
  updatedAt: formatDateTime(s.created_at),
});

/** The account behind the tracking user: what the accounts service holds of the person (no secret). */
export const accountFields = (a: Account, external: { issuer: string | null }) => ({
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
  createdAt: formatDateTime(a.created_at),
  updatedAt: formatDateTime(a.updated_at),
});

/** An application the user allowed (their live consents). */
export const consentFields = (c: Consent) => ({
  clientId: c.clientId,
  clientName: c.clientName,
  scopes: c.scopes,
  grantedAt: formatDateTime(c.grantedAt),
});
