import { z } from 'zod';

/** Every service the API process can mount; operators pick a subset with SERVICES. */
export const SERVICE_NAMES = ['places', 'catalogue', 'partners', 'tracking', 'accounts'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** Every BullMQ queue a worker process can run; operators pick a subset with WORKER_QUEUES. */
export const QUEUE_NAMES = [
  'records',
  'thumbnails',
  'exports',
  'recommendations',
  'maintenance',
  'webhooks',
  'imports',
] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

/** The largest AUTH_CLOCK_TOLERANCE_S allowed: revoked token ids are kept this long past their expiry. */
export const MAX_CLOCK_TOLERANCE_S = 300;

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** Comma-separated list restricted to `allowed`; `all` (or empty) means every value. */
function listOf<T extends string>(allowed: readonly T[]) {
  return z.string().transform((value, ctx): T[] => {
    const items = value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (items.length === 0 || (items.length === 1 && items[0] === 'all')) return [...allowed];
    for (const item of items) {
      if (!(allowed as readonly string[]).includes(item)) {
        ctx.addIssue({ code: 'custom', message: `unknown value "${item}" (allowed: all, ${allowed.join(', ')})` });
        return z.NEVER;
      }
    }
    return [...new Set(items)] as T[];
  });
}

/** Most proxy hops TRUST_PROXY accepts (a higher count is a typo, not a deployment). */
export const MAX_TRUSTED_PROXY_HOPS = 10;

/**
 * TRUST_PROXY: `false` (0), `true` (exactly one proxy hop) or the number of reverse proxies in
 * front of the API that append to X-Forwarded-For. The client address is then the one the
 * outermost trusted proxy saw: the Nth entry from the right, never a value the client wrote.
 */
const proxyHops = z.string().transform((value, ctx): number => {
  const v = value.trim().toLowerCase();
  if (v === 'true' || v === 'yes') return 1;
  if (v === 'false' || v === 'no') return 0;
  if (/^\d{1,3}$/.test(v) && Number(v) <= MAX_TRUSTED_PROXY_HOPS) return Number(v);
  ctx.addIssue({
    code: 'custom',
    message: `"${value}" is not false, true (one proxy) or a number of trusted proxy hops from 0 to ${MAX_TRUSTED_PROXY_HOPS}`,
  });
  return z.NEVER;
});

/** `host:port` list (REDIS_CLUSTER_NODES). */
const redisNodes = z.string().transform((value, ctx): { host: string; port: number }[] => {
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const nodes = items.map((item) => {
    const m = /^(\[[0-9a-f:.]+\]|[^:\s[\]]+):(\d{1,5})$/i.exec(item);
    const port = Number(m?.[2]);
    return m && port >= 1 && port <= 65535 ? { host: (m[1] as string).replace(/^\[|\]$/g, ''), port } : undefined;
  });
  const bad = items.filter((_, i) => nodes[i] === undefined);
  if (items.length === 0 || bad.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `not a list of host:port (${bad.length ? `"${bad.join('", "')}"` : 'empty'}), e.g. 127.0.0.1:7000,127.0.0.1:7001`,
    });
    return z.NEVER;
  }
  return nodes as { host: string; port: number }[];
});

const byteSize = z.string().regex(/^\d+(b|kb|mb)?$/i, 'a size such as 512kb or 1mb');

/**
 * The environment variables the project reads, with the defaults that suit a local machine.
 * The README's configuration table is written from this list; keep them in step.
 */
export const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  /** Trusted reverse-proxy hops (see proxyHops); the config exposes it as trustProxyHops. */
  TRUST_PROXY: proxyHops.default(0),
  /** Unset: http://localhost:<PORT> (see loadConfig). */
  PUBLIC_URL: z.url().optional(),
  DATABASE_URL: z.url().default('postgres://root@127.0.0.1:5432/sports'),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  /** A streaming replica for searches and collection reads (shared/db/read-router.ts); unset: the primary. */
  DATABASE_READ_URL: z.url().optional(),
  /** A replica further behind than this is skipped (reads go to the primary until it catches up). */
  DATABASE_READ_MAX_LAG_MS: z.coerce.number().int().min(0).max(600_000).default(2_000),
  /**
   * `false` when DATABASE_URL is a transaction pooler (PgBouncer before 1.21 in pool_mode=transaction):
   * statements then run unnamed, as the pooler hands each transaction any server connection and a
   * statement prepared on one is unknown on the next (docs/scale-out.md).
   */
  DATABASE_PREPARED_STATEMENTS: bool.default(true),
  REDIS_URL: z.url().default('redis://127.0.0.1:6379'),
  /**
   * `host:port,host:port,...` of a Redis Cluster (some of its nodes: the rest are discovered):
   * every Redis connection then goes to the cluster and REDIS_URL is not used.
   */
  REDIS_CLUSTER_NODES: redisNodes.optional(),
  QUEUE_PREFIX: z.string().min(1).default('sb'),
  SERVICES: listOf(SERVICE_NAMES).default([...SERVICE_NAMES]),
  WORKER_QUEUES: listOf(QUEUE_NAMES).default([...QUEUE_NAMES]),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /**
   * The worker process's nice value (0 to 19; workers/main.ts applies it before any thread
   * starts, so its import threads inherit it): on a host shared with the API, the API's requests
   * get the CPU first while the workers catch up (docs/operations.md).
   */
  WORKER_NICE: z.coerce.number().int().min(0).max(19).default(0),
  OUTBOX_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(500),
  /**
   * Seconds after its relay an outbox row whose job has not completed is looked for in Redis by
   * the workers' relays, and relayed again if Redis lost it (docs/operations.md).
   */
  OUTBOX_RECONCILE_AFTER_S: z.coerce.number().int().min(1).max(86_400).default(300),
  /**
   * How long a worker's lock on a job lasts without renewal (renewed every half of it while the job
   * runs): a killed worker's job is taken up again about this long plus WORKER_STALLED_INTERVAL_MS later.
   */
  WORKER_LOCK_DURATION_MS: z.coerce.number().int().min(1_000).max(600_000).default(3_000),
  /** How often each worker looks for jobs whose lock expired (stalled) and puts them back in line. */
  WORKER_STALLED_INTERVAL_MS: z.coerce.number().int().min(500).max(600_000).default(1_000),
  /** Port of the workers' Prometheus /metrics (job durations, stalled jobs); unset: not served, 0: any free port. */
  WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
  /** A client has this long to send a request's headers (slow clients cannot hold connections). */
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(600_000).default(15_000),
  /** ...and this long for the whole request, body included (a 32 MB activity on a slow uplink fits). */
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(120_000),
  /** An idle keep-alive connection is closed after this (above the usual balancers' 60 s). */
  HTTP_KEEPALIVE_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(600_000).default(65_000),
  /** Requests served on one connection before it is closed (0: no limit), so load spreads again. */
  HTTP_MAX_REQUESTS_PER_SOCKET: z.coerce.number().int().min(0).max(1_000_000).default(1_000),
  /** Seconds between two scheduled recomputations of the sport recommendations; 0: no schedule. */
  RECOMMENDATIONS_INTERVAL_S: z.coerce
    .number()
    .int()
    .refine((n) => n === 0 || (n >= 60 && n <= 2_592_000), '0 (no schedule) or 60 to 2592000 seconds')
    .default(3600),
  /**
   * JSON file overriding the sport families of the distance records (docs/tracking-records.md);
   * its content is checked by the tracking service's settings (ServiceSettings).
   */
  RECORDS_FAMILIES_FILE: z.string().min(1).optional(),
  /** Seconds a finished bulk export of activities stays downloadable before the cleanup deletes it. */
  EXPORT_TTL_S: z.coerce.number().int().min(60).max(2_592_000).default(86_400),
  /** Seconds a deleted activity's tombstone stays readable at /v2/deleted_activities (docs/tracking-sync.md). */
  TRACKING_TOMBSTONE_TTL_S: z.coerce.number().int().min(3_600).max(31_536_000).default(2_592_000),
  /**
   * Least time, in seconds, between a user's `scheduleDelete` request and the date it names (the
   * grace period in which they may cancel); 0 lets them ask for now (docs/accounts-lifecycle.md).
   */
  ACCOUNT_DELETE_GRACE_S: z.coerce.number().int().min(0).max(31_536_000).default(604_800),
  /**
   * Seconds between two runs of the `maintenance` workers' accounts purge: a due account is deleted
   * at most this long after its `scheduleDelete` date (docs/accounts-lifecycle.md).
   */
  ACCOUNTS_PURGE_INTERVAL_S: z.coerce.number().int().min(10).max(86_400).default(3600),
  /** Seconds the first answer to a request sent with an Idempotency-Key is kept for its retries. */
  IDEMPOTENCY_KEY_TTL_S: z.coerce.number().int().min(60).max(2_592_000).default(86_400),
  /**
   * Seconds a request holds its Idempotency-Key without renewing it (it renews every third of
   * it while it runs): the key of a request whose process died is free again after this.
   */
  IDEMPOTENCY_LEASE_S: z.coerce.number().int().min(3).max(3_600).default(60),
  /** Webhooks may target http:// URLs (development); https only otherwise (docs/webhooks.md). */
  WEBHOOKS_ALLOW_HTTP: bool.default(false),
  /** Webhooks may reach loopback, private, link-local and other internal addresses (tests on loopback). */
  WEBHOOKS_ALLOW_PRIVATE: bool.default(false),
  /** Longest a webhook delivery may take, from the DNS look-up to the end of the answer. */
  WEBHOOKS_TIMEOUT_MS: z.coerce.number().int().min(50).max(60_000).default(5_000),
  /** The first retry of a failed delivery comes about this long after it; each next one 4 times later (at most 8 h). */
  WEBHOOKS_RETRY_BASE_MS: z.coerce.number().int().min(10).max(3_600_000).default(20_000),
  /** A hook failing without a success for this long is disabled (its pending deliveries given up). */
  WEBHOOKS_DISABLE_AFTER_S: z.coerce.number().int().min(1).max(2_592_000).default(86_400),
  /** Deliveries a worker process sends at once (the `webhooks` queue's concurrency: they wait on the network). */
  WEBHOOKS_CONCURRENCY: z.coerce.number().int().min(1).max(512).default(32),
  MIGRATE_ON_START: bool.default(true),
  SEED_ON_START: bool.default(true),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  BODY_LIMIT: byteSize.default('1mb'),
  /** Largest body of POST /v2/activities: an activity with its streams (24 h at 1 Hz is about 10 MB). */
  ACTIVITY_BODY_LIMIT: byteSize.default('32mb'),
  /** Largest GPX, TCX or FIT file POST /v2/activities takes (raw or multipart; docs/tracking-files.md). */
  ACTIVITY_FILE_LIMIT: byteSize.default('16mb'),
  /** Worker threads reading imported files, per API process (parsing is CPU-bound, off the event loop). */
  IMPORT_THREADS: z.coerce.number().int().min(1).max(32).default(1),
  /** Longest an import may run in its thread before it is stopped (413). */
  IMPORT_TIMEOUT_S: z.coerce.number().int().min(1).max(3600).default(60),
  /** Imports waiting for a free thread, per API process; beyond, 503 with Retry-After. */
  IMPORT_QUEUE: z.coerce.number().int().min(0).max(10_000).default(16),
  /**
   * A file import larger than this runs on the workers as a job (202 with the job), whatever
   * `Prefer` says; smaller ones are read at once unless `Prefer: respond-async` (docs/tracking-files.md).
   */
  IMPORT_ASYNC_ABOVE: byteSize.default('4mb'),
  /** Files a worker process imports at once (the `imports` queue's concurrency: one thread each). */
  IMPORTS_CONCURRENCY: z.coerce.number().int().min(1).max(32).default(2),
  /** Largest zip of a bulk import (POST /v2/file_import/activities with application/zip). */
  BULK_IMPORT_LIMIT: byteSize.default('512mb'),
  CORS_ORIGINS: z.string().default('*'),
  RATE_LIMIT_ENABLED: bool.default(true),
  RATE_LIMIT_POINTS: z.coerce.number().int().min(1).default(600),
  RATE_LIMIT_DURATION_S: z.coerce.number().int().min(1).default(60),
  LOGIN_RATE_LIMIT_POINTS: z.coerce.number().int().min(1).default(10),
  LOGIN_RATE_LIMIT_DURATION_S: z.coerce.number().int().min(1).default(300),
  AUTH_ISSUER: z.url().optional(),
  AUTH_AUDIENCE: z.string().min(1).default('sports-api'),
  AUTH_CLOCK_TOLERANCE_S: z.coerce.number().int().min(0).max(MAX_CLOCK_TOLERANCE_S).default(30),
  AUTH_EXTERNAL_JWKS_URL: z.url().optional(),
  AUTH_EXTERNAL_ISSUER: z.string().min(1).optional(),
  AUTH_EXTERNAL_AUDIENCE: z.string().min(1).optional(),
  AUTH_EXTERNAL_ALGORITHMS: z.string().default('RS256,ES256'),
  COOKIE_KEYS: z.string().min(16).default('dev-only-cookie-key-change-me'),
  /** Accept id_tokens of our registered clients as bearers (the places spec's implicit login). */
  AUTH_ACCEPT_ID_TOKENS: bool.default(true),
  /** The `stack` claim of the tracking requestKey: which deployment issued it. */
  ACCOUNTS_STACK: z.string().min(1).max(64).default('default'),
  /** A refresh token family ends this long after the sign-in it came from, however often it is used. */
  REFRESH_TOKEN_ABSOLUTE_TTL_S: z.coerce
    .number()
    .int()
    .min(1)
    .max(365 * 24 * 3600)
    .default(30 * 24 * 3600),
  /** A refresh token unused this long expires (each use issues a new one with a fresh idle window). */
  REFRESH_TOKEN_IDLE_TTL_S: z.coerce
    .number()
    .int()
    .min(1)
    .max(365 * 24 * 3600)
    .default(14 * 24 * 3600),
  STORAGE_DIR: z.string().min(1).default('./storage'),
  UPLOAD_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(3 * 1024 * 1024 - 1),
});

export type Env = z.infer<typeof envSchema>;
export interface Config extends Omit<Env, 'TRUST_PROXY' | 'PUBLIC_URL'> {
  /** PUBLIC_URL, or http://localhost:<PORT> when unset (port 3000 when PORT is 0: it is not known yet). */
  PUBLIC_URL: string;
  /** Whether any reverse proxy is trusted (X-Forwarded-* read at all): trustProxyHops > 0. */
  TRUST_PROXY: boolean;
  /** Reverse proxies trusted to append to X-Forwarded-For (Koa's maxIpsCount); 0: none. */
  trustProxyHops: number;
  /** Issuer of our own tokens: AUTH_ISSUER or PUBLIC_URL. */
  issuer: string;
  bodyLimitBytes: number;
  activityBodyLimitBytes: number;
  activityFileLimitBytes: number;
  importAsyncAboveBytes: number;
  bulkImportLimitBytes: number;
  corsOrigins: string[] | '*';
}

export class ConfigError extends Error {}

/**
 * Checks a service adds to variables declared here (a ServiceRegistration's `settings`): each
 * replaces the variable's schema, with the same value, so a bad file or value stops the start
 * naming the variable. Every variable stays declared here, the one list the README follows.
 */
export type ServiceSettings = { [K in keyof Env]?: z.ZodType<Env[K], string | undefined> };

function bytes(size: string): number {
  const m = /^(\d+)(b|kb|mb)?$/i.exec(size);
  const n = Number(m?.[1] ?? 0);
  const unit = (m?.[2] ?? 'b').toLowerCase();
  return unit === 'mb' ? n * 1024 * 1024 : unit === 'kb' ? n * 1024 : n;
}

/**
 * Reads and validates the environment, with the services' checks `settings` (a process starts
 * with those of shared/services/config.ts); a bad value names the variable and stops the start.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, settings: ServiceSettings = {}): Config {
  const raw: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  const parsed = envSchema.extend(settings as z.ZodRawShape).safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  // The checks keep each variable's type (ServiceSettings).
  const e = parsed.data as Env;
  // A server moved to another port keeps issuing links and tokens it can verify itself.
  const publicUrl = (e.PUBLIC_URL ?? `http://localhost:${e.PORT || 3000}`).replace(/\/$/, '');
  const origins = e.CORS_ORIGINS.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return {
    ...e,
    TRUST_PROXY: e.TRUST_PROXY > 0,
    trustProxyHops: e.TRUST_PROXY,
    PUBLIC_URL: publicUrl,
    issuer: (e.AUTH_ISSUER ?? publicUrl).replace(/\/$/, ''),
    bodyLimitBytes: bytes(e.BODY_LIMIT),
    activityBodyLimitBytes: bytes(e.ACTIVITY_BODY_LIMIT),
    activityFileLimitBytes: bytes(e.ACTIVITY_FILE_LIMIT),
    importAsyncAboveBytes: bytes(e.IMPORT_ASYNC_ABOVE),
    bulkImportLimitBytes: bytes(e.BULK_IMPORT_LIMIT),
    corsOrigins: origins.length === 0 || origins.includes('*') ? '*' : origins,
  };
}
