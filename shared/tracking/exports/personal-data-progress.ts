import type { Db } from '../../db/database.ts';
import { challengeFields } from '../challenges/fields.ts';
import { challengesQuery } from '../challenges/query.ts';
import { equipmentFields } from '../gear/fields.ts';
import { goalFields } from '../goals/fields.ts';
import { userGoals } from '../goals/store.ts';

/**
 * The personal-data export's files of gear, measure goals and challenges
 * (docs/accounts-lifecycle.md): arrays of each as the API answers it in plain JSON. Each
 * collection is bounded (100 of each per user), so each is read whole.
 */
export async function progressFiles(db: Db, userId: string): Promise<[name: string, items: unknown[]][]> {
  const [equipments, goals, challenges] = await Promise.all([
    db
      .selectFrom('user_equipments')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .orderBy('id')
      .execute(),
    userGoals(db, userId),
    challengesQuery(db, userId).orderBy('c.started_at').orderBy('c.id').execute(),
  ]);
  return [
    ['equipments.json', equipments.map(equipmentFields)],
    ['measure_goals.json', goals.map(goalFields)],
    ['challenges.json', challenges.map(challengeFields)],
  ];
}
