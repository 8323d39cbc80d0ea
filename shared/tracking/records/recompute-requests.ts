import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { job } from '../../queue/jobs.ts';
import { enqueueInTransaction } from '../../queue/outbox-write.ts';
import type { RecomputeScope } from './recompute-scope.ts';
import { loadRecordWays } from './records-store.ts';
import { type RecordsSettings, settingsFingerprint } from './settings.ts';

export type { RecomputeScope } from './recompute-scope.ts';

export interface RecomputeOptions {
  scope: RecomputeScope;
  settings: RecordsSettings;
  /** Also the activities whose efforts already reflect their version under these settings. */
  force: boolean;
  /** Activities read and enqueued per transaction. */
  pageSize?: number;
  /** After each page: activities looked at so far, of `total`. */
  onProgress?: (seen: number, total: number) => void;
}

export interface RecomputeSummary {
  /** Activities in the scope when the run started. */
  total: number;
  /** Jobs written to the outbox. */
  enqueued: number;
  /** Activities skipped because their records are up to date for their version and the settings. */
  upToDate: number;
  /** The settings digest the jobs carry (and their ids). */
  settings: string;
  /** When a --force run started (in its job ids), else null. */
  forced: string | null;
  /** The database's clock when the run started (for waitForRecompute). */
  startedAt: Date;
}

/** `2026-11-23T13:05:01.123Z` → `20261123T130501123Z`: no `:` (BullMQ refuses it in job ids). */
const compactTime = (date: Date) => date.toISOString().replace(/[-:.]/g, '');

/** The activities of the scope (`a`): its user, sports and span of start dates. */
export function activitiesInScope(db: Db, scope: RecomputeScope) {
  const userId = 'userId' in scope ? scope.userId : undefined;
  return db
    .selectFrom('activities as a')
    .$if(userId !== undefined, (q) => q.where('a.user_id', '=', userId as string))
    .$if(scope.sportIds !== undefined, (q) => q.where('a.sport_id', 'in', scope.sportIds as number[]))
    .$if(scope.since !== undefined, (q) => q.where('a.startdate', '>=', scope.since as Date))
    .$if(scope.until !== undefined, (q) => q.where('a.startdate', '<', scope.until as Date));
}

interface Page {
  id: string;
  user_id: string;
  version: number;
  startdate: Date;
  done: boolean;
}

/**
 * Enqueues a `records/recompute-activity` job for each activity of the scope whose records do not
 * already reflect its version under the current settings (all of them with `force`), in pages of
 * `pageSize` activities, each page's jobs in one transaction through the outbox (so a job exists
 * exactly when its row was committed, and the relays of the API and worker processes move them to
 * BullMQ). Job ids are deterministic: running it again before the workers are through makes no new
 * jobs, and after they are through there is nothing left to enqueue.
 */
export async function enqueueRecompute(db: Db, options: RecomputeOptions): Promise<RecomputeSummary> {
  const pageSize = options.pageSize ?? 1000;
  const fingerprint = settingsFingerprint(options.settings, await loadRecordWays(db));
  const { rows } = await sql<{ now: Date }>`select now() as now`.execute(db);
  const startedAt = rows[0]?.now ?? new Date();
  const forced = options.force ? compactTime(startedAt) : null;
  const { scope } = options;
  const userId = 'userId' in scope ? scope.userId : undefined;
  const inScope = activitiesInScope(db, scope);
  const counted = await inScope.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  const summary: RecomputeSummary = {
    total: Number(counted.n),
    enqueued: 0,
    upToDate: 0,
    settings: fingerprint,
    forced,
    startedAt,
  };

  // Keyset pages: by id over everyone (the primary key), by (startdate, id) over one user (activities_user_startdate_idx).
  let after: Page | undefined;
  let seen = 0;
  for (;;) {
    let q = inScope
      .leftJoin('activity_records_state as s', 's.activity_id', 'a.id')
      .select([
        'a.id',
        'a.user_id',
        'a.version',
        'a.startdate',
        sql<boolean>`coalesce(s.version = a.version and s.settings = ${fingerprint}, false)`.as('done'),
      ])
      .limit(pageSize);
    if (userId !== undefined) {
      q = q.orderBy('a.startdate').orderBy('a.id');
      if (after) {
        const { startdate, id } = after;
        q = q.where((eb) => eb(eb.refTuple('a.startdate', 'a.id'), '>', eb.tuple(startdate, id)));
      }
    } else {
      q = q.orderBy('a.id');
      if (after) q = q.where('a.id', '>', after.id);
    }
    const page: Page[] = await q.execute();
    if (page.length === 0) break;
    const todo = options.force ? page : page.filter((a) => !a.done);
    if (todo.length > 0)
      await db.transaction().execute((trx) =>
        enqueueInTransaction(
          trx,
          todo.map((a) =>
            job('records', 'recompute-activity', {
              activityId: a.id,
              userId: a.user_id,
              version: a.version,
              settings: fingerprint,
              forced,
            }),
          ),
        ),
      );
    summary.enqueued += todo.length;
    summary.upToDate += page.length - todo.length;
    seen += page.length;
    options.onProgress?.(seen, Math.max(seen, summary.total));
    after = page.at(-1);
    if (page.length < pageSize) break;
  }
  return summary;
}

export interface RecomputeProgress {
  /**
   * Activities of the scope whose records do not reflect their current version under the run's
   * settings (or, for a forced run, were not computed since it started).
   */
  pending: number;
  /**
   * The settings digest of a worker that recomputed an activity of the scope since the run started
   * under other settings than the run's, else null: the command and the workers were given
   * different RECORDS_FAMILIES_FILEs (or the datatypes changed), and `pending` would never reach 0.
   */
  otherSettings: string | null;
}

/** Where the recomputation `summary` asked stands (for `records:recompute --wait`). */
export async function recomputeProgress(
  db: Db,
  scope: RecomputeScope,
  summary: RecomputeSummary,
): Promise<RecomputeProgress> {
  const inScope = activitiesInScope(db, scope).leftJoin('activity_records_state as s', 's.activity_id', 'a.id');
  const [pending, other] = await Promise.all([
    inScope
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where((eb) =>
        eb.or([
          eb('s.activity_id', 'is', null),
          eb('s.version', '<>', eb.ref('a.version')),
          eb('s.settings', '<>', summary.settings),
          ...(summary.forced !== null ? [eb('s.computed_at', '<', summary.startedAt)] : []),
        ]),
      )
      .executeTakeFirstOrThrow(),
    inScope
      .select('s.settings')
      .where('s.computed_at', '>=', summary.startedAt)
      .where('s.settings', '<>', summary.settings)
      .limit(1)
      .executeTakeFirst(),
  ]);
  return { pending: Number(pending.n), otherSettings: other?.settings ?? null };
}

/**
 * The `recompute-activity` jobs of a run (its settings, written since it started, of its user when
 * it has one) that failed for good: their activities stay pending, so a batch job waiting for
 * `pending` to reach 0 ends once only these are left (outbox rows: no activity is read).
 */
export async function failedRecomputes(db: Db, scope: RecomputeScope, summary: RecomputeSummary): Promise<number> {
  const userId = 'userId' in scope ? scope.userId : undefined;
  const row = await db
    .selectFrom('outbox')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('queue', '=', 'records')
    .where('job_name', '=', 'recompute-activity')
    .where('done_at', 'is', null)
    .where('failed_at', 'is not', null)
    .where('created_at', '>=', summary.startedAt)
    .where(sql<string>`payload->>'settings'`, '=', summary.settings)
    .$if(userId !== undefined, (q) => q.where(sql<string>`payload->>'userId'`, '=', userId as string))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
