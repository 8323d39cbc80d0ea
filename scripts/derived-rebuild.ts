import { sql } from 'kysely';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { parseOptions, runCli, usageError } from '../shared/runtime/cli.ts';
import { fillMovingFields } from '../shared/tracking/activities/moving-store.ts';
import { fillStreamPreviews } from '../shared/tracking/streams/preview-store.ts';
import { compactTime } from '../shared/tracking/sumups/rebuild-requests.ts';
import { enqueueThumbnailRebuild, thumbnailRebuildProgress } from '../shared/tracking/thumbnail/thumbnail-rebuild.ts';

const USAGE = `usage: npm run derived:rebuild -- (--thumbnails | --moving | --previews | --all-kinds)... [--force] [--wait]
  --thumbnails  asks the workers (queue thumbnails) to draw again the thumbnails of activities and
                of place pictures whose file is missing from STORAGE_DIR
  --moving      fills the moving time and pauses of the activities without them (here, not a job)
  --previews    writes the stream previews of the long activities without one (here, not a job)
  --all-kinds   all three
  --force       every thumbnail, moving time and preview, not only the missing ones
  --wait        stay until the workers have drawn every thumbnail asked
Records and statistics: npm run records:recompute.`;

const OPTIONS = {
  thumbnails: { type: 'boolean', default: false },
  moving: { type: 'boolean', default: false },
  previews: { type: 'boolean', default: false },
  'all-kinds': { type: 'boolean', default: false },
  force: { type: 'boolean', default: false },
  wait: { type: 'boolean', default: false },
} as const;

/** --wait gives up when no thumbnail was drawn for this long. */
const STALL_MS = 60_000;

/**
 * `npm run derived:rebuild`: brings back what PostgreSQL and STORAGE_DIR derive from the data
 * after a restore or a lost STORAGE_DIR (docs/operations.md, "Rebuilding derived data"). The
 * thumbnails go through the outbox to the workers; moving fields and previews are computed here.
 * Every part skips what is already there unless --force, so a second run finds nothing to do.
 */
await runCli(async (config) => {
  const args = parseOptions(OPTIONS, USAGE);
  const all = args['all-kinds'];
  const kinds = { thumbnails: all || args.thumbnails, moving: all || args.moving, previews: all || args.previews };
  if (!kinds.thumbnails && !kinds.moving && !kinds.previews)
    usageError(USAGE, 'give --thumbnails, --moving, --previews or --all-kinds');
  if (args.wait && !kinds.thumbnails) usageError(USAGE, '--wait waits for thumbnails: give --thumbnails');

  const { db } = createDb(config.DATABASE_URL, 2);
  try {
    if (config.MIGRATE_ON_START) await migrateToLatest(db);
    const { rows } = await sql<{ now: Date }>`select now() as now`.execute(db);
    const requestedAt = compactTime(rows[0]?.now ?? new Date());
    console.log(`derived:rebuild (${args.force ? 'everything, forced' : 'what is missing'}):`);
    if (kinds.moving) {
      const filled = await fillMovingFields(db, 200, { all: args.force });
      console.log(`  moving time and pauses: ${filled} activities computed`);
    }
    if (kinds.previews) {
      const filled = await fillStreamPreviews(db, 100, { all: args.force });
      console.log(`  stream previews: ${filled} activities written`);
    }
    if (!kinds.thumbnails) return;
    const { activities, pictures } = await enqueueThumbnailRebuild(db, config.STORAGE_DIR, {
      force: args.force,
      requestedAt,
    });
    console.log(
      `  thumbnails of activities: ${activities.enqueued} jobs enqueued of ${activities.total} activities (${activities.present} present, ${activities.userSet} set by their users)`,
    );
    console.log(
      `  thumbnails of pictures: ${pictures.enqueued} jobs enqueued of ${pictures.total} pictures (${pictures.present} present, ${pictures.originalMissing} originals missing from STORAGE_DIR)`,
    );
    console.log('  (outbox jobs: the processes running the thumbnails queue draw them)');
    if (!args.wait) return;

    let lastPending = Number.POSITIVE_INFINITY;
    let progressAt = Date.now();
    for (;;) {
      const progress = await thumbnailRebuildProgress(db, requestedAt);
      if (progress.pending === 0) {
        if (progress.failed > 0) {
          console.error(`${progress.failed} thumbnail jobs failed: see the thumbnails queue's failed jobs`);
          process.exitCode = 1;
          return;
        }
        break;
      }
      if (progress.pending < lastPending) {
        lastPending = progress.pending;
        progressAt = Date.now();
      } else if (Date.now() - progressAt > STALL_MS) {
        console.error(
          `no thumbnail drawn for ${STALL_MS / 1000} s (${progress.pending} left): is a worker running the thumbnails queue (WORKER_QUEUES)? The jobs stay enqueued.`,
        );
        process.exitCode = 1;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    console.log('  thumbnails drawn');
  } finally {
    await db.destroy();
  }
});
