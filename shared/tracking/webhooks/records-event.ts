import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import type { Json } from '../../queue/jobs.ts';
import { iri, TRACKING_PREFIX } from '../iri.ts';
import { recordFields } from '../records/record-fields.ts';
import { emitTrackingEvent, hasListeners } from './events.ts';

/**
 * `records_update`: the records job changed some of a user's records. The resource is the list
 * of the user's records of the sports it refreshed (`/v2/user_records?user=…&sport[]=…`), the
 * data that list as GET answers it, whole. Emitted in the job's transaction, only when a hook
 * listens (the records are read for it then). A user's record changes are serialized by the job,
 * so their events are in order.
 */
export async function emitRecordsUpdate(trx: Kysely<Database>, userId: string, sports: number[]): Promise<boolean> {
  if (sports.length === 0 || !(await hasListeners(trx, userId, 'records_update'))) return false;
  const rows = await trx
    .selectFrom('user_records')
    .selectAll()
    .where('user_id', '=', userId)
    .where('sport_id', 'in', sports)
    .orderBy('id')
    .execute();
  const user = iri('users', userId);
  const query = new URLSearchParams([
    ['user', user],
    ...sports.map((s): [string, string] => ['sport[]', iri('sports', s)]),
  ]);
  const resource = `${TRACKING_PREFIX}/user_records?${query}`;
  return emitTrackingEvent(trx, {
    type: 'records_update',
    userId,
    subject: `${TRACKING_PREFIX}/user_records?${new URLSearchParams([['user', user]])}`,
    resource,
    data: {
      '@context': `${TRACKING_PREFIX}/contexts/UserRecord`,
      '@id': resource,
      '@type': 'hydra:Collection',
      'hydra:member': rows.map((r) => ({
        '@id': iri('user_records', r.id),
        '@type': 'UserRecord',
        ...(recordFields(r) as { [key: string]: Json }),
      })),
      'hydra:totalItems': rows.length,
    },
  });
}
