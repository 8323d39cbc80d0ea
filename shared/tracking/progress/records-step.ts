import type { Db } from '../../db/database.ts';
import type { MarkDone } from '../../queue/outbox.ts';
import { lockUserRecords } from '../records/records-store.ts';
import { applyActivityProgress, type ProgressOutcome, rebuildUserProgress } from './apply.ts';
import { refreshChallenge } from './challenge-progress.ts';

/**
 * The gear and challenges' part of a records job (workers/processors/records.ts), the way the
 * statistics' is (shared/tracking/sumups/records-step.ts): its `markDone` goes to the step run
 * before the job's own, so it runs in the transaction that step commits, under the user's
 * records lock, just before the job's done mark.
 */
export function progressAlongRecords(request: { activityId: string; userId: string }, markDone: MarkDone) {
  let outcome: ProgressOutcome | undefined;
  return {
    markDone: (async (trx) => {
      outcome = await applyActivityProgress(trx, request);
      await markDone(trx);
    }) satisfies MarkDone,
    /** What the step did (read once the job's transaction has run it). */
    outcome: (): ProgressOutcome | undefined => outcome,
  };
}

/** A rebuild's `markDone`: the user's gear totals and challenges rebuilt, then the job's mark, in the same transaction. */
export function rebuildProgressBefore(userId: string, markDone: MarkDone): MarkDone {
  return async (trx) => {
    await rebuildUserProgress(trx, userId);
    await markDone(trx);
  };
}

/** The `records/challenge-refresh` job: one challenge computed again under the user's records lock, the done mark last. */
export function refreshChallengeJob(db: Db, request: { challengeId: string; userId: string }, markDone: MarkDone) {
  return db.transaction().execute(async (trx) => {
    await lockUserRecords(trx, request.userId);
    const found = await refreshChallenge(trx, request.userId, request.challengeId);
    await markDone(trx);
    return { status: found ? 'computed' : 'gone' };
  });
}
