import type { Db } from '../../db/database.ts';
import { type MarkDone, NO_MARK } from '../../queue/outbox.ts';
import { readActivityContent } from '../activities/content-read.ts';
import type { ActivityContent } from '../activities/data.ts';
import { trackingWork } from '../unit-of-work.ts';
import { bestEfforts } from './best-efforts.ts';
import {
  loadRecordWays,
  lockUserRecords,
  recordRules,
  recordsUpToDate,
  refreshUserRecords,
  replaceBestEfforts,
  saveRecordsState,
} from './records-store.ts';
import { type RecordsSettings, settingsFingerprint } from './settings.ts';

/** What the records need of a stored activity. */
export interface ActivityForRecords {
  id: string;
  userId: string;
  sportId: number;
  startdate: Date;
  version: number;
  content: ActivityContent;
}

/** Reads an activity as it is now; null when it does not exist (any more). */
export type ActivityLoader = (db: Db, activityId: string) => Promise<ActivityForRecords | null>;

/** The stored activity, through the activities' own reader. */
export const storedActivity: ActivityLoader = async (db, activityId) => {
  const found = await readActivityContent(db, activityId);
  if (!found) return null;
  const { row, content } = found;
  return {
    id: row.id,
    userId: row.user_id,
    sportId: row.sport_id,
    startdate: row.startdate,
    version: row.version,
    content,
  };
};

export interface RecordsRequest {
  activityId: string;
  /** The activity's owner (used when the activity is gone). */
  userId: string;
  /** Sports whose records the change may touch besides the activity's current one: its sport when deleted, its previous sport. */
  sports: number[];
  /** Recompute even when the efforts already reflect the activity's version under the same settings. */
  force: boolean;
}

export interface RecordsOutcome {
  /**
   * computed: the activity's efforts were rewritten and the records refreshed; up-to-date: already
   * done for this version and settings (a job delivered twice); deleted: the activity is gone,
   * its sports' records were refreshed; superseded: the activity changed meanwhile, the job of its
   * newer version does the work.
   */
  status: 'computed' | 'up-to-date' | 'deleted' | 'superseded';
  efforts: number;
  /** Sports whose records were refreshed. */
  sports: number[];
  written: number;
  removed: number;
  /** The settings digest the work was done under. */
  settings: string;
}

/**
 * Brings a user's records up to date after a change of one activity: the activity's best efforts
 * are recomputed from its samples (O(its samples)), then each affected sport's records are
 * re-read from the efforts by index (O(record groups), whatever the user's history), all in one
 * transaction serialized per user. Idempotent: a second run finds the work done or rewrites the
 * same values, and a record whose holder and value do not change keeps its updated_at.
 * `markDone` (the job's) commits with the records.
 */
export async function updateActivityRecords(
  db: Db,
  request: RecordsRequest,
  settings: RecordsSettings,
  { load = storedActivity, markDone = NO_MARK }: { load?: ActivityLoader; markDone?: MarkDone } = {},
): Promise<RecordsOutcome> {
  const recordWays = await loadRecordWays(db);
  const fingerprint = settingsFingerprint(settings, recordWays);
  const outcome = (status: RecordsOutcome['status'], efforts = 0): RecordsOutcome => ({
    status,
    efforts,
    sports: [],
    written: 0,
    removed: 0,
    settings: fingerprint,
  });
  if (!request.force && (await recordsUpToDate(db, request.activityId, fingerprint))) return outcome('up-to-date');

  // The computation runs before the transaction: no lock is held while the samples are read.
  const activity = await load(db, request.activityId);
  const efforts = activity
    ? bestEfforts(activity.content, await recordRules(db, settings, activity.sportId, recordWays))
    : [];
  const userId = activity?.userId ?? request.userId;

  return db.transaction().execute(async (trx) => {
    await lockUserRecords(trx, userId);
    const sports = new Set(request.sports);
    const result = outcome('deleted');
    if (activity) {
      sports.add(activity.sportId);
      const current = await trx
        .selectFrom('activities')
        .select('version')
        .where('id', '=', activity.id)
        .executeTakeFirst();
      if (current && current.version !== activity.version) return outcome('superseded');
      if (current) {
        const owner = {
          activityId: activity.id,
          userId,
          sportId: activity.sportId,
          startdate: activity.startdate,
        };
        for (const sport of await replaceBestEfforts(trx, owner, efforts)) sports.add(sport);
        await saveRecordsState(trx, activity.id, activity.version, fingerprint);
        result.status = 'computed';
      }
    }
    result.sports = [...sports].sort((a, b) => a - b);
    for (const sport of result.sports) {
      const counts = await refreshUserRecords(trx, userId, sport);
      result.written += counts.written;
      result.removed += counts.removed;
    }
    if (result.written + result.removed > 0)
      await trackingWork(trx, async (uow) => uow.emit({ type: 'RecordsUpdated', userId, sports: result.sports }));
    await markDone(trx);
    return result;
  });
}
