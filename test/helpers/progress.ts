import type { Db } from '../../shared/db/database.ts';
import { applyActivityProgress, rebuildUserProgress } from '../../shared/tracking/progress/apply.ts';
import { lockUserRecords } from '../../shared/tracking/records/records-store.ts';

/** Shared by the gear, goals and challenges tests (not a test file itself). */

/** What the records job does for one activity's gear and challenges, under the user's lock. */
export function applyProgressNow(db: Db, activityId: string, userId: string) {
  return db.transaction().execute(async (trx) => {
    await lockUserRecords(trx, userId);
    return applyActivityProgress(trx, { activityId, userId });
  });
}

/** What records:recompute's rebuild job does for one user's gear and challenges. */
export function rebuildProgressNow(db: Db, userId: string) {
  return db.transaction().execute(async (trx) => {
    await lockUserRecords(trx, userId);
    return rebuildUserProgress(trx, userId);
  });
}
