import type { Db } from '../../db/database.ts';
import type { MarkDone } from '../../queue/outbox.ts';
import { lockUserRecords } from '../records/records-store.ts';
import { applyActivitySumups, rebuildUserSumups, type SumupOutcome } from './rollup.ts';

/**
 * The rollup's part of a records job of one activity (workers/processors/records.ts). Its
 * `markDone` goes to the records in place of the job's own: the rollup is then brought in line
 * in the records' transaction, under their lock of the user, just before the job's done mark,
 * which stays last. When the records ran no transaction (already up to date, or superseded by a
 * newer version), `finish` does the same in a transaction of its own.
 */
export function sumupsAlongRecords(db: Db, request: { activityId: string; userId: string }, markDone: MarkDone) {
  let outcome: SumupOutcome | undefined;
  return {
    markDone: (async (trx) => {
      outcome = await applyActivitySumups(trx, request.activityId);
      await markDone(trx);
    }) satisfies MarkDone,
    async finish(): Promise<SumupOutcome> {
      if (outcome !== undefined) return outcome;
      return db.transaction().execute(async (trx) => {
        await lockUserRecords(trx, request.userId);
        const own = await applyActivitySumups(trx, request.activityId);
        await markDone(trx);
        return own;
      });
    },
  };
}

/** Rebuilds a user's rollup under their records lock, the job's done mark last in the same transaction. */
export function rebuildSumupsJob(db: Db, userId: string, markDone: MarkDone) {
  return db.transaction().execute(async (trx) => {
    await lockUserRecords(trx, userId);
    const rebuilt = await rebuildUserSumups(trx, userId);
    await markDone(trx);
    return rebuilt;
  });
}
