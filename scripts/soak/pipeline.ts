import { sql } from 'kysely';
import type { Db } from '../../shared/db/database.ts';
import { send } from './http.ts';
import { RouteStats } from './route-stats.ts';

/** What the end-of-run checks found: lines to print and the number of problems. */
export interface CheckResult {
  lines: string[];
  errors: number;
}

/**
 * Whether the background work caught up: waits (at most `drainS`) until every outbox row is done
 * or failed; a row still open after that, or failed, is an error (each failed job is named).
 */
export async function checkOutbox(db: Db, drainS: number): Promise<CheckResult> {
  const started = performance.now();
  const open = async () =>
    Number(
      (
        await db
          .selectFrom('outbox')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('done_at', 'is', null)
          .where('failed_at', 'is', null)
          .executeTakeFirstOrThrow()
      ).n,
    );
  let left = await open();
  while (left > 0 && performance.now() - started < drainS * 1000) {
    await new Promise((r) => setTimeout(r, 250));
    left = await open();
  }
  const waited = ((performance.now() - started) / 1000).toFixed(1);
  const { rows } = await sql<{ queue: string; job_name: string; rows: number; done: number; failed: number }>`
    select queue, job_name, count(*)::int as rows, count(done_at)::int as done, count(failed_at)::int as failed
    from outbox group by queue, job_name order by queue, job_name`.execute(db);
  const failed = await db
    .selectFrom('outbox')
    .select(['queue', 'job_name', 'job_id'])
    .where('failed_at', 'is not', null)
    .orderBy('id')
    .limit(10)
    .execute();
  const failedCount = rows.reduce((n, r) => n + r.failed, 0);
  const lines = [
    left === 0
      ? `outbox: every row finished ${waited} s after the load`
      : `outbox: ${left} row(s) neither done nor failed after ${waited} s: ERROR`,
    ...rows.map((r) => `  ${`${r.queue}/${r.job_name}`.padEnd(36)} ${r.rows} rows, ${r.done} done, ${r.failed} failed`),
    ...failed.map((r) => `  failed: ${r.queue}/${r.job_name} ${r.job_id} (npm run jobs shows why): ERROR`),
  ];
  return { lines, errors: left + failedCount };
}

/** /health and /ready answer 200 once the load is over. */
export async function checkProbes(apiUrl: string, timeoutMs: number): Promise<CheckResult> {
  const stats = new RouteStats();
  for (const path of ['/health', '/ready'])
    await send(stats, timeoutMs, { route: `GET ${path}`, expect: 200, url: `${apiUrl}${path}` });
  const lines = stats.report().filter((l) => l.startsWith('  error'));
  if (lines.length === 0) lines.push('probes: /health and /ready answer 200');
  return { lines, errors: stats.errors };
}
