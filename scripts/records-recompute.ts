import cliProgress from 'cli-progress';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { parseOptions, runCli, usageError } from '../shared/runtime/cli.ts';
import { refreshComputedClimbs } from '../shared/tracking/activities/climb-store.ts';
import { unknownSportIds } from '../shared/tracking/activities/references.ts';
import { enqueueRecompute, recomputeProgress } from '../shared/tracking/records/recompute-requests.ts';
import { describeFilters, parseRecomputeScope } from '../shared/tracking/records/recompute-scope.ts';
import { recordsSettings } from '../shared/tracking/records/settings.ts';
import {
  compactTime,
  enqueueSumupsRebuild,
  sumupsRebuildProgress,
} from '../shared/tracking/sumups/rebuild-requests.ts';

const USAGE = `usage: npm run records:recompute -- (--user <user id> | --all) [--sport <id>[,<id>...]] [--since <date>] [--until <date>] [--force] [--wait]
  --user ID      the activities of one tracking user (the account's ldid)
  --all          every activity
  --sport IDS    only the activities of these sports (ids, comma-separated or the option repeated)
  --since DATE   only the activities starting at or after DATE (YYYY-MM-DD at midnight UTC, or an ISO 8601 instant with its offset)
  --until DATE   only the activities starting before DATE
  --force        also the activities whose records are up to date for their version and the settings
  --wait         stay until the workers have recomputed every activity asked (and rebuilt the statistics),
                 with a second progress bar
Also rebuilds the statistics by period of the users in scope (one job per user, always; with
--sport, --since or --until, of the users who have an activity among them).`;

const OPTIONS = {
  user: { type: 'string' },
  all: { type: 'boolean', default: false },
  sport: { type: 'string', multiple: true },
  since: { type: 'string' },
  until: { type: 'string' },
  force: { type: 'boolean', default: false },
  wait: { type: 'boolean', default: false },
} as const;

/** --wait gives up when no activity was recomputed for this long. */
const STALL_MS = 60_000;

const usage = (problem: string) => usageError(USAGE, problem);

/**
 * `npm run records:recompute`: asks the workers (queue records) to recompute the records of one
 * user's activities or of all, through the outbox; the activities whose records already reflect
 * their version under the current settings (RECORDS_FAMILIES_FILE, the datatypes' record ways) are
 * skipped, so a second run finds nothing to do (docs/tracking-records.md). It also asks for a
 * rebuild of the statistics by period of each user in scope (docs/tracking-statistics.md). The
 * progress bars go to stderr, the summary to stdout.
 */
await runCli(async (config) => {
  const args = parseOptions(OPTIONS, USAGE);
  const parsed = parseRecomputeScope(args);
  const { scope } =
    'problems' in parsed ? usage(parsed.problems.map((p) => `${p.path}: ${p.message}`).join('\n')) : parsed;
  const settings = recordsSettings(config.RECORDS_FAMILIES_FILE);

  const { db } = createDb(config.DATABASE_URL, 2);
  const bar = new cliProgress.SingleBar(
    { format: '{label} [{bar}] {value}/{total} activities', stream: process.stderr, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  try {
    if (config.MIGRATE_ON_START) await migrateToLatest(db);
    const unknownSports = await unknownSportIds(db, scope.sportIds ?? []);
    if (unknownSports.length > 0) {
      console.error(`no sport ${unknownSports.join(', ')} (see GET /v2/sports)`);
      process.exitCode = 1;
      return;
    }
    if ('userId' in scope) {
      const user = await db.selectFrom('tracking_users').select('id').where('id', '=', scope.userId).executeTakeFirst();
      if (!user) {
        console.error(`no tracking user ${scope.userId}`);
        process.exitCode = 1;
        return;
      }
    }
    // Climbs computed under an older rule: brought to today's before the statistics are rebuilt.
    const climbs = await refreshComputedClimbs(db, 'userId' in scope ? { userId: scope.userId } : {});
    const started = performance.now();
    bar.start(0, 0, { label: 'enqueueing' });
    const summary = await enqueueRecompute(db, {
      scope,
      settings,
      force: args.force,
      onProgress: (seen, total) => {
        bar.setTotal(total);
        bar.update(seen);
      },
    });
    bar.stop();
    const filters = describeFilters(scope);
    const who = `${'userId' in scope ? `user ${scope.userId}` : 'all users'}${filters ? `, ${filters}` : ''}`;
    console.log(`records:recompute (${who}, settings ${summary.settings}${summary.forced ? ', forced' : ''}):`);
    console.log(`  ${summary.total} activities`);
    console.log(
      `  ${summary.enqueued} recompute jobs enqueued (outbox; the processes running the records queue do them)`,
    );
    console.log(`  ${summary.upToDate} already up to date, skipped`);
    console.log(`  ${climbs} computed elevation gains and losses brought to the current rule`);
    const requestedAt = compactTime(summary.startedAt);
    const rebuilds = await enqueueSumupsRebuild(db, scope, requestedAt);
    console.log(`  ${rebuilds} statistics rebuild jobs enqueued (one per user)`);
    if (!args.wait) return;

    let lastPending = Number.POSITIVE_INFINITY;
    let progressAt = Date.now();
    if (summary.enqueued > 0) bar.start(summary.enqueued, 0, { label: 'recomputed' });
    while (summary.enqueued > 0) {
      const progress = await recomputeProgress(db, scope, summary);
      bar.update(Math.max(0, summary.enqueued - progress.pending));
      if (progress.pending === 0) break;
      if (progress.otherSettings !== null) {
        bar.stop();
        console.error(
          `the workers recompute with other records settings (${progress.otherSettings}) than this command (${summary.settings}): give both the same RECORDS_FAMILIES_FILE`,
        );
        process.exitCode = 1;
        return;
      }
      if (progress.pending < lastPending) {
        lastPending = progress.pending;
        progressAt = Date.now();
      } else if (Date.now() - progressAt > STALL_MS) {
        bar.stop();
        console.error(
          `no progress for ${STALL_MS / 1000} s (${progress.pending} activities left): is a worker running the records queue (WORKER_QUEUES), with the same RECORDS_FAMILIES_FILE? The jobs stay enqueued.`,
        );
        process.exitCode = 1;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    bar.stop();
    // Then the statistics: one job per user, usually done by now.
    lastPending = Number.POSITIVE_INFINITY;
    progressAt = Date.now();
    for (;;) {
      const rebuild = await sumupsRebuildProgress(db, requestedAt);
      if (rebuild.failed > 0) {
        console.error(`${rebuild.failed} statistics rebuild jobs failed: see the records queue's failed jobs`);
        process.exitCode = 1;
        return;
      }
      if (rebuild.pending === 0) break;
      if (rebuild.pending < lastPending) {
        lastPending = rebuild.pending;
        progressAt = Date.now();
      } else if (Date.now() - progressAt > STALL_MS) {
        console.error(
          `no statistics rebuilt for ${STALL_MS / 1000} s (${rebuild.pending} users left): is a worker running the records queue (WORKER_QUEUES)? The jobs stay enqueued.`,
        );
        process.exitCode = 1;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `  recomputed in ${seconds.toFixed(1)} s (${(summary.enqueued / seconds).toFixed(0)} activities/s, enqueueing included)`,
    );
  } finally {
    bar.stop();
    await db.destroy();
  }
});
