import type { Middleware } from 'koa';
import type { Config } from '../shared/config.ts';
import { createReadDb, type DbHandle } from '../shared/db/database.ts';
import { type MarkerStore, ReadRouter } from '../shared/db/read-router.ts';
import type { Logger } from '../shared/observability/logger.ts';
import { unavailableDependency } from './http/unavailable.ts';

/** A standby cancels a query whose rows its replay must remove (recovery conflict): the primary has none. */
const RECOVERY_CONFLICT = '40001';

/**
 * The API's read routing: the replica of DATABASE_READ_URL (its own pool, as large as the
 * primary's) beside the primary, or the primary alone. `stop()` closes the replica's pool.
 */
export function createReadRouter(config: Config, primary: DbHandle, markers: MarkerStore, logger: Logger): ReadRouter {
  const url = config.DATABASE_READ_URL;
  return new ReadRouter(
    primary,
    url ? { handle: createReadDb(url, config.DATABASE_POOL_MAX, config.DATABASE_PREPARED_STATEMENTS), url } : undefined,
    {
      markers,
      keyPrefix: config.QUEUE_PREFIX,
      maxLagMs: config.DATABASE_READ_MAX_LAG_MS,
      isUnavailable: (error) =>
        unavailableDependency(error) !== undefined || (error as { code?: unknown })?.code === RECOVERY_CONFLICT,
      onChange: (used, reason) =>
        used
          ? logger.info('read replica in use')
          : logger.warn({ reason }, 'read replica skipped: reads go to the primary'),
    },
  );
}

/**
 * After a request that may have written (any method but GET, HEAD and OPTIONS) and succeeded,
 * marks its caller as a recent writer, before the answer leaves: their next read, on whichever
 * API process, is sent to the primary (ReadRouter.noteWrite).
 */
export function markWriters(reads: ReadRouter): Middleware {
  return async (ctx, next) => {
    await next();
    const accountId: string | undefined = ctx.state.principal?.accountId;
    if (accountId && ctx.status < 400 && !['GET', 'HEAD', 'OPTIONS'].includes(ctx.method))
      await reads.noteWrite(accountId);
  };
}
