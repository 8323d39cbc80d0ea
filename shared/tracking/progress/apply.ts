import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import { moveChallenges, refreshUserChallenges } from './challenge-progress.ts';
import {
  currentContribution,
  sameContribution,
  saveContribution,
  saveUserContributions,
  storedContribution,
} from './contribution.ts';
import { moveGearTotals, rebuildGearTotals } from './gear-totals.ts';

/**
 * added: first counted; changed: its old contribution subtracted, the new one added; unchanged:
 * it adds what it added already (a job delivered twice, or a change of its name); removed: the
 * activity is gone, what it added was subtracted; none: gone and never counted.
 */
export type ProgressOutcome = 'added' | 'changed' | 'unchanged' | 'removed' | 'none';

/**
 * Brings the gear totals and the challenges in line with one activity as it stands now, in O(1)
 * of the user's history: its last contribution (activity_progress_state) is subtracted and its
 * current one added. Reads the activity rather than trusting a job's payload, so jobs of one
 * activity delivered late, twice or out of order all end in the same figures. The caller holds
 * the user's records lock.
 */
export async function applyActivityProgress(
  db: Kysely<Database>,
  request: { activityId: string; userId: string },
): Promise<ProgressOutcome> {
  const { activityId, userId } = request;
  const [after, before] = await Promise.all([
    currentContribution(db, activityId, userId),
    storedContribution(db, activityId, userId),
  ]);
  if (!after && !before) return 'none';
  if (after && before && sameContribution(before, after)) {
    if (before.version !== after.version) await saveContribution(db, after);
    return 'unchanged';
  }
  await moveGearTotals(db, userId, before, after);
  if (after) await saveContribution(db, after);
  else
    await db
      .deleteFrom('activity_progress_state')
      .where('activity_id', '=', activityId)
      .where('user_id', '=', userId)
      .execute();
  await moveChallenges(db, userId, before, after);
  return before ? (after ? 'changed' : 'removed') : 'added';
}

/**
 * Rebuilds a user's gear totals and challenges from their activities (O(their history)): for
 * `npm run records:recompute`. The caller holds the user's records lock.
 */
export async function rebuildUserProgress(
  db: Kysely<Database>,
  userId: string,
): Promise<{ activities: number; equipments: number; challenges: number }> {
  const activities = await saveUserContributions(db, userId);
  const equipments = await rebuildGearTotals(db, userId);
  const challenges = await refreshUserChallenges(db, userId);
  return { activities, equipments, challenges };
}
