import type { Selectable } from 'kysely';
import type { ShareActivitiesTable } from '../../db/schema/shares.ts';
import { formatDateTime } from '../dates.ts';
import { iri, TRACKING_PREFIX } from '../iri.ts';

/**
 * The members of the personal data export's JSON files that no API view has: a share as listed
 * there with its activity's IRI. Measures, records and devices use their views' own
 * (measure-fields.ts, record-fields.ts, device-fields.ts); the account's members come from
 * the accounts service's registration, in the `sections` of personal-data.ts.
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
