import type { QueueName } from './queues.ts';

/** What survives the trip through the outbox (jsonb) and BullMQ (JSON) unchanged: no Date, no Map. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** Renders the thumbnail of an activity picture (queue `thumbnails`). */
export type ThumbnailJobPayload = {
  activityId: number;
  /** The original the thumbnail is made from; the job is skipped if the activity moved on. */
  imagePath: string;
  /** When `npm run derived:rebuild` or a `thumbnails_rebuild` job asked (compact time, also in the job id), else absent. */
  requestedAt?: string;
};

/**
 * Draws the thumbnail of a tracking activity from its GPS track, or its sport's placeholder
 * (queue `thumbnails`). Written with the activity's creation and with a change of its sport.
 */
export type TrackThumbnailJobPayload = {
  activityId: string;
  /** The activity's version after the change (the job always draws the activity as it is then). */
  version: number;
  /** When `npm run derived:rebuild` or a `thumbnails_rebuild` job asked (compact time, also in the job id), else absent. */
  requestedAt?: string;
};

/** Recomputes every sport recommendation (queue `recommendations`); replaces the previous result. */
export type RecommendationsJobPayload = {
  /** Who asked: `schedule` (the job scheduler) or an ISO time for a one-off request. */
  requestedBy: string;
};

/**
 * A tracking activity was created, changed or deleted (queue `records`): the user's records of
 * its sport are brought up to date. Written in the transaction of the change.
 */
export type ActivityChangedJobPayload = {
  activityId: string;
  userId: string;
  sportId: number;
  /** The activity's version after the change (deleted: the version it had, plus one). */
  version: number;
  change: 'created' | 'updated' | 'deleted';
  /** The sport before an update that changed it (its records must be recomputed too), else null. */
  previousSportId: number | null;
};

/**
 * Recomputes one activity's records as they stand (queue `records`): asked by
 * `npm run records:recompute`, e.g. after the sport families changed (docs/tracking-records.md).
 */
export type RecordsRecomputeJobPayload = {
  activityId: string;
  userId: string;
  /** The activity's version when asked. */
  version: number;
  /** Digest of the records settings the command ran with (shared/tracking/records/settings.ts). */
  settings: string;
  /** When a `--force` run asked (also in the job id, so it is not taken for a job already done), else null. */
  forced: string | null;
};

/**
 * Rebuilds a user's statistics by period from their activities (queue `records`): after a change
 * of their time zone, and from `npm run records:recompute` (docs/tracking-statistics.md).
 */
export type SumupsRebuildJobPayload = {
  userId: string;
  /**
   * When it was asked (compact ISO time, also in the job id; a `statistics_rebuild` job's also
   * carries the job's id): each request its own job.
   */
  requestedAt: string;
};

/**
 * A challenge was created, or a change of its window, target or sport was made (queue `records`):
 * its result and achievement are computed again from the user's activities
 * (docs/tracking-gear-goals-challenges.md). Written in the transaction of the change.
 */
export type ChallengeRefreshJobPayload = {
  challengeId: string;
  userId: string;
  /** The challenge's version after the change. */
  version: number;
};

/** Builds the zip of a bulk export of a user's activities (queue `exports`); written with the export's row. */
export type UserExportJobPayload = {
  exportId: string;
};

/** Deletes expired exports and their files, fails stale ones (queue `exports`, from its job scheduler). */
export type ExportsCleanupJobPayload = {
  /** Who asked: `schedule` (the job scheduler) or an ISO time for a one-off request. */
  requestedBy: string;
};

/** Deletes the expired idempotency keys (queue `maintenance`, from its job scheduler). */
export type IdempotencyExpireJobPayload = {
  /** Who asked: `schedule` (the job scheduler) or an ISO time for a one-off request. */
  requestedBy: string;
};

/** Deletes the tombstones of deleted activities older than TRACKING_TOMBSTONE_TTL_S (queue `maintenance`, from its job scheduler). */
export type TombstonesExpireJobPayload = {
  /** Who asked: `schedule` (the job scheduler) or an ISO time for a one-off request. */
  requestedBy: string;
};

/**
 * Deletes the accounts whose `scheduleDelete` has come and resumes the deletions a dead run left
 * (queue `maintenance`, from its job scheduler; docs/accounts-lifecycle.md).
 */
export type AccountsPurgeJobPayload = {
  /** Who asked: `schedule` (the job scheduler) or an ISO time for a one-off request. */
  requestedBy: string;
};

/** Fans an event out to the hooks listening to it (queue `webhooks`); written with the event. */
export type WebhookEventJobPayload = {
  eventId: string;
};

/** Sends one event to one hook, retrying until delivered or given up (queue `webhooks`). */
export type WebhookDeliverJobPayload = {
  deliveryId: string;
};

/** Deletes the webhook events whose deliveries have all ended long ago (queue `webhooks`, from its job scheduler). */
export type WebhooksCleanupJobPayload = {
  /** Who asked: `schedule` (the job scheduler) or an ISO time for a one-off request. */
  requestedBy: string;
};

/**
 * Reads a stored activity file for the job row `jobId` (queue `imports`, docs/tracking-files.md
 * "Imports as jobs"): a file sent with `Prefer: respond-async` or over IMPORT_ASYNC_ABOVE, or a
 * file of a bulk import. Written with the job's row.
 */
export type ImportFileJobPayload = {
  jobId: string;
  /** The job's owner: every statement of the job is pinned by it (docs/scale-out.md). */
  userId: string;
};

/**
 * Opens the zip of the bulk import `jobId` (queue `imports`, docs/tracking-files.md "Bulk
 * import"): checks its limits, then writes a job per file. Written with the bulk import's row.
 */
export type BulkSplitJobPayload = ImportFileJobPayload;

/**
 * Runs a batch job staff started with POST /v2/jobs (docs/tracking-records.md, "Recomputing"):
 * enqueues the work of its scope, then comes back (delayed) until that work is done. Written with
 * the job's row; queue `records` for `records_recompute` and `statistics_rebuild`, `thumbnails`
 * for `thumbnails_rebuild`.
 */
export type BatchJobPayload = {
  jobId: string;
  /** The job's owner (the staff member who started it): every statement on its row is pinned by it. */
  userId: string;
};

/**
 * Fails to compile if a key is not a planned queue (config QUEUE_NAMES) or a payload is not plain
 * JSON. Declare payloads with `type`, not `interface` (an interface has no index signature).
 */
type Checked<
  M extends { [Q in QueueName]?: { [name: string]: { [key: string]: Json } } } & {
    [K in Exclude<keyof M, QueueName>]: never;
  },
> = M;

/**
 * Every job of this build: queue → job name → payload. Producers (the outbox writer) and the
 * workers' handlers are both typed from it, so a payload cannot drift between them.
 *
 * A queue of the plan (config QUEUE_NAMES) is listed here only once its issue adds jobs: nothing
 * can be enqueued to an unlisted queue, and WORKER_QUEUES=all runs every queue listed here.
 */
export type JobPayloads = Checked<{
  records: {
    'activity-changed': ActivityChangedJobPayload;
    'recompute-activity': RecordsRecomputeJobPayload;
    'sumups-rebuild': SumupsRebuildJobPayload;
    'challenge-refresh': ChallengeRefreshJobPayload;
    'records-recompute-job': BatchJobPayload;
    'statistics-rebuild-job': BatchJobPayload;
  };
  thumbnails: {
    'activity-thumbnail': ThumbnailJobPayload;
    'activity-track-thumbnail': TrackThumbnailJobPayload;
    'thumbnails-rebuild-job': BatchJobPayload;
  };
  recommendations: { 'compute-all': RecommendationsJobPayload };
  exports: { 'user-export': UserExportJobPayload; 'cleanup-expired': ExportsCleanupJobPayload };
  maintenance: {
    'idempotency-expire': IdempotencyExpireJobPayload;
    'accounts-purge': AccountsPurgeJobPayload;
    'tombstones-expire': TombstonesExpireJobPayload;
  };
  webhooks: {
    event: WebhookEventJobPayload;
    deliver: WebhookDeliverJobPayload;
    'cleanup-events': WebhooksCleanupJobPayload;
  };
  imports: { 'import-file': ImportFileJobPayload; 'bulk-split': BulkSplitJobPayload };
}>;

export type JobQueue = keyof JobPayloads;
export type JobName<Q extends JobQueue> = keyof JobPayloads[Q] & string;
export type JobPayload<Q extends JobQueue, N extends JobName<Q>> = JobPayloads[Q][N];

/**
 * The deterministic BullMQ job id of each job: the same logical work always gets the same id, so
 * a row relayed twice (a relay crash between add and mark) makes one job.
 */
const JOB_IDS: { [Q in JobQueue]: { [N in JobName<Q>]: (payload: JobPayload<Q, N>) => string } } = {
  records: {
    // One job per activity version: a change relayed twice makes one job, each new change its own.
    'activity-changed': ({ activityId, version }) => `records-${activityId}-v${version}`,
    // One job per activity version and settings: running the command twice makes one job each.
    'recompute-activity': ({ activityId, version, settings, forced }) =>
      `records-recompute-${activityId}-v${version}-${settings}${forced === null ? '' : `-${forced}`}`,
    // One job per user and request: a request relayed twice makes one job.
    'sumups-rebuild': ({ userId, requestedAt }) =>
      `sumups-rebuild-${userId.replace(/[^A-Za-z0-9_-]/g, '_')}-${requestedAt.replace(/[^A-Za-z0-9_-]/g, '_')}`,
    // One job per challenge version: a change relayed twice makes one job, each new change its own.
    'challenge-refresh': ({ challengeId, version }) => `challenge-refresh-${challengeId}-v${version}`,
    // One job per job row (its id is written once); it delays itself while its work runs.
    'records-recompute-job': ({ jobId }) => `records-recompute-job-${jobId}`,
    'statistics-rebuild-job': ({ jobId }) => `statistics-rebuild-job-${jobId}`,
  },
  thumbnails: {
    // One job per stored original (a new upload has a new path, hence its own job); a rebuild's
    // its own (the job of the upload may still be completed in Redis under the bare id).
    'activity-thumbnail': ({ imagePath, requestedAt }) =>
      `thumb-${imagePath.replace(/[^A-Za-z0-9_-]/g, '_')}${requestedAt === undefined ? '' : `-${requestedAt}`}`,
    // One job per tracking activity version (a change relayed twice makes one job), and per rebuild.
    'activity-track-thumbnail': ({ activityId, version, requestedAt }) =>
      `track-thumb-${activityId.replace(/[^A-Za-z0-9_-]/g, '_')}-v${version}${requestedAt === undefined ? '' : `-${requestedAt}`}`,
    // One job per job row (its id is written once); it delays itself while its work runs.
    'thumbnails-rebuild-job': ({ jobId }) => `thumbnails-rebuild-job-${jobId}`,
  },
  recommendations: {
    // One job per request (the computation replaces everything, so a duplicate only costs time).
    'compute-all': ({ requestedBy }) => `recs-${requestedBy.replace(/[^A-Za-z0-9_-]/g, '_')}`,
  },
  exports: {
    // One job per export: its row is written once, so a relayed duplicate makes one job.
    'user-export': ({ exportId }) => `export-${exportId}`,
    // One job per request (the cleanup only deletes what has expired, so a duplicate is harmless).
    'cleanup-expired': ({ requestedBy }) => `exports-cleanup-${requestedBy.replace(/[^A-Za-z0-9_-]/g, '_')}`,
  },
  maintenance: {
    // One job per request (it only deletes what has expired, so a duplicate is harmless).
    'idempotency-expire': ({ requestedBy }) => `idempotency-expire-${requestedBy.replace(/[^A-Za-z0-9_-]/g, '_')}`,
    // One job per request (it only deletes what is due or started, so a duplicate is harmless).
    'accounts-purge': ({ requestedBy }) => `accounts-purge-${requestedBy.replace(/[^A-Za-z0-9_-]/g, '_')}`,
    // One job per request (it only deletes what has expired, so a duplicate is harmless).
    'tombstones-expire': ({ requestedBy }) => `tombstones-expire-${requestedBy.replace(/[^A-Za-z0-9_-]/g, '_')}`,
  },
  webhooks: {
    // One job per event (its id is written once), one per delivery (event and hook).
    event: ({ eventId }) => `webhook-${eventId}`,
    deliver: ({ deliveryId }) => `webhook-${deliveryId}`,
    // One job per request (it only deletes what has ended, so a duplicate is harmless).
    'cleanup-events': ({ requestedBy }) => `webhooks-cleanup-${requestedBy.replace(/[^A-Za-z0-9_-]/g, '_')}`,
  },
  imports: {
    // One job per job row (its id is written once).
    'import-file': ({ jobId }) => `import-${jobId}`,
    'bulk-split': ({ jobId }) => `bulk-split-${jobId}`,
  },
};

/**
 * Jobs added to BullMQ at once (outbox.ts addJobsNow), never from an outbox row: the worker has
 * no row to mark done. Their writer's own rows make them again should Redis lose them.
 */
const WITHOUT_OUTBOX_ROW: { [Q in JobQueue]?: readonly JobName<Q>[] } = { webhooks: ['deliver'] };

export function hasOutboxRow(queue: JobQueue, name: string): boolean {
  return !(WITHOUT_OUTBOX_ROW[queue] as readonly string[] | undefined)?.includes(name);
}

/** The queues that have jobs in this build, in map order. */
export const JOB_QUEUES = Object.keys(JOB_IDS) as JobQueue[];

export function hasJobs(queue: string): queue is JobQueue {
  return Object.hasOwn(JOB_IDS, queue);
}

/** The job names of a queue, at run time (the worker checks it has a handler for each). */
export function jobNames<Q extends JobQueue>(queue: Q): JobName<Q>[] {
  return Object.keys(JOB_IDS[queue]) as JobName<Q>[];
}

/** Only `job()` makes one, so an outbox row's id always comes from the builder above. */
type JobId = string & { readonly __jobId: true };

/** A job ready for the outbox: one member per queue and job name, payload typed accordingly. */
export type OutboxJob = {
  [Q in JobQueue]: {
    [N in JobName<Q>]: { queue: Q; name: N; payload: JobPayload<Q, N>; jobId: JobId };
  }[JobName<Q>];
}[JobQueue];

/**
 * BullMQ refuses ids containing ':' and all-digit ids (its generated ids are counters); an empty
 * id would get a generated one, so the same work relayed twice would make two jobs.
 */
export function jobIdProblem(jobId: string): string | undefined {
  if (jobId === '') return 'is empty';
  if (jobId.includes(':')) return "contains ':'";
  if (/^\d+$/.test(jobId)) return 'is all digits';
  // The outbox adds its epoch after an '@' (outbox-epoch.ts).
  if (jobId.includes('@')) return "contains '@'";
  return undefined;
}

/** The job `name` of `queue` with its deterministic id, for `enqueueInTransaction`. */
export function job<Q extends JobQueue, N extends JobName<Q>>(queue: Q, name: N, payload: JobPayload<Q, N>): OutboxJob {
  const buildId = JOB_IDS[queue][name] as (payload: JobPayload<Q, N>) => string;
  // Q and N pick one member of the union, but TypeScript cannot narrow a union by generics.
  return { queue, name, payload, jobId: buildId(payload) as JobId } as OutboxJob;
}
