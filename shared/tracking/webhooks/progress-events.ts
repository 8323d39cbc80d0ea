import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import type { Json } from '../../queue/jobs.ts';
import { challengeFields } from '../challenges/fields.ts';
import { challengesQuery } from '../challenges/query.ts';
import { equipmentFields } from '../gear/fields.ts';
import type { EquipmentRow } from '../gear/store.ts';
import { iri, TRACKING_PREFIX } from '../iri.ts';
import { emitTrackingEvent, hasListeners } from './events.ts';

/**
 * The records job's events about gear and challenges (docs/webhooks.md, "Events"), emitted in
 * its transaction, only when a hook listens. The data is the resource as GET answers it then.
 */

/** `equipment_alert`: the gear's distance reached the `alertDistance` its user set ("replace your shoes"). */
export async function emitEquipmentAlert(trx: Kysely<Database>, row: EquipmentRow): Promise<boolean> {
  if (!(await hasListeners(trx, row.user_id, 'equipment_alert'))) return false;
  const resource = iri('user_equipments', row.id);
  return emitTrackingEvent(trx, {
    type: 'equipment_alert',
    userId: row.user_id,
    resource,
    data: {
      '@context': `${TRACKING_PREFIX}/contexts/UserEquipment`,
      '@id': resource,
      '@type': 'UserEquipment',
      ...(equipmentFields(row) as { [key: string]: Json }),
    },
  });
}

/** `challenge_achieved`: the challenge's result reached its target, the first time. */
export async function emitChallengeAchieved(
  trx: Kysely<Database>,
  userId: string,
  challengeId: string,
): Promise<boolean> {
  if (!(await hasListeners(trx, userId, 'challenge_achieved'))) return false;
  const row = await challengesQuery(trx, userId).where('c.id', '=', challengeId).executeTakeFirst();
  if (!row) return false;
  const resource = iri('user_challenges', row.id);
  return emitTrackingEvent(trx, {
    type: 'challenge_achieved',
    userId,
    resource,
    data: {
      '@context': `${TRACKING_PREFIX}/contexts/UserChallenge`,
      '@id': resource,
      '@type': 'UserChallenge',
      ...(challengeFields(row) as { [key: string]: Json }),
    },
  });
}
