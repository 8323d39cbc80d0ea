import type { Selectable } from 'kysely';
import type { Account } from '../../accounts/accounts.ts';
import type { Consent } from '../../accounts/consents.ts';
import type { ShareActivitiesTable } from '../../db/schema/shares.ts';
import { formatDateTime } from '../dates.ts';
import type { UserDeviceRow } from '../devices/store.ts';
import { iri, TRACKING_PREFIX } from '../iri.ts';
import type { Measure } from '../measures/store.ts';
import type { UserRecord } from '../records/records-read.ts';

/**
 * The members of the personal data export's JSON files: each resource as the API answers it in
 * plain JSON (the views of api/tracking/*.ts; test/tracking-export-personal-data.test.ts checks
 * they agree), and the account's profile as the accounts service knows it.
 */

/** A UserMeasure (GET /v2/user_measures/{id}). */
export const measureFields = (m: Measure) => ({
  id: m.id,
  user: iri('users', m.user_id),
  datatype: iri('datatypes', m.datatype_id),
  value: m.value,
  date: formatDateTime(m.date),
  createdAt: formatDateTime(m.created_at),
  updatedAt: formatDateTime(m.updated_at),
});

/** A UserRecord (GET /v2/user_records/{id}). */
export const recordFields = (r: UserRecord) => ({
  id: r.id,
  user: iri('users', r.user_id),
  datatype: iri('datatypes', r.datatype_id),
  activity: iri('activities', r.activity_id),
  sport: iri('sports', r.sport_id),
  type: r.type,
  value: r.value,
  createdAt: formatDateTime(r.created_at),
  updatedAt: formatDateTime(r.updated_at),
  date: formatDateTime(r.date),
});

/** A UserDevice (GET /v2/user_devices/{id}). */
export const deviceFields = (d: UserDeviceRow) => ({
  id: d.id,
  serial: d.serial,
  model: iri('device_models', d.model_id),
  firmware: iri('firmwares', d.firmware_id),
  user: iri('users', d.user_id),
  ownership: d.ownership,
  lastConnectedAt: d.last_connected_at && formatDateTime(d.last_connected_at),
  createdAt: formatDateTime(d.created_at),
  updatedAt: formatDateTime(d.updated_at),
});

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
