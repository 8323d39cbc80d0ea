import { readdirSync, readFileSync } from 'node:fs';

/** Small helpers for the benchmarks' numbers. */

export interface LoadStats {
  /** Completed requests (or queries) per second over the measured window. */
  rps: number;
  p50: number;
  p99: number;
  count: number;
  errors: number;
}

/** The q-quantile (0..1) of already sorted values, nearest-rank. */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}

/**
 * Runs `task` from `concurrency` loops for `durationS` seconds; each loop waits for its task
 * before starting the next (closed loop, like autocannon's connections).
 */
export async function closedLoop(
  concurrency: number,
  durationS: number,
  task: (i: number) => Promise<unknown>,
): Promise<LoadStats> {
  const latencies: number[] = [];
  let errors = 0;
  let n = 0;
  const started = performance.now();
  const end = started + durationS * 1000;
  const loop = async () => {
    while (performance.now() < end) {
      const t = performance.now();
      try {
        await task(n++);
        latencies.push(performance.now() - t);
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsed = (performance.now() - started) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  return {
    rps: latencies.length / elapsed,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    count: latencies.length,
    errors,
  };
}

export const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

export function bytes(n: number): string {
  if (n >= 1024 ** 3) return `${(n / 1024 ** 3).toFixed(2)} GB`;
  if (n >= 1024 ** 2) return `${(n / 1024 ** 2).toFixed(0)} MB`;
  return `${(n / 1024).toFixed(0)} kB`;
}

/** CPU time (user + system, ms) of one process, from /proc (Linux); undefined elsewhere. */
export function processCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

const CLOCK_TICKS = 100;

/** Per database (or all): each backend's CPU when last seen, and what the backends gone since had used. */
const seenBackends = new Map<string, { last: Map<number, number>; gone: number }>();

/**
 * CPU time (ms) of the local processes named `postgres`: all of them, or only the backends
 * serving `database` (their process title names it). The machine may run other work on the same
 * or other PostgreSQL servers (test suites): give the database to leave it out. The total never
 * goes down: a backend that exits (a pool closing an idle connection) keeps the CPU it was last
 * seen with, so a slice's difference is not negative.
 */
export function postgresCpuMs(database?: string): number | undefined {
  try {
    const now = new Map<number, number>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
        // A backend's title: "postgres: 15/main: user database host(port) state".
        if (database !== undefined && !readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(` ${database} `))
          continue;
      } catch {
        continue;
      }
      now.set(Number(entry), processCpuMs(Number(entry)) ?? 0);
    }
    const key = database ?? '';
    const seen = seenBackends.get(key) ?? { last: new Map(), gone: 0 };
    // Gone, or its pid taken by a new backend (less CPU than the old one had).
    for (const [pid, cpu] of seen.last) if ((now.get(pid) ?? -1) < cpu) seen.gone += cpu;
    seenBackends.set(key, { last: now, gone: seen.gone });
    let total = seen.gone;
    for (const cpu of now.values()) total += cpu;
    return total;
  } catch {
    return undefined;
  }
}

/** Runs `work` and returns its result with the CPU ms per operation spent by each watched party. */
export async function withCpu<T extends { count: number }>(
  parties: Record<string, () => number | undefined>,
  work: () => Promise<T>,
): Promise<T & { cpuPerOp: Record<string, number> }> {
  const before = Object.fromEntries(Object.entries(parties).map(([k, f]) => [k, f()]));
  const result = await work();
  const cpuPerOp: Record<string, number> = {};
  for (const [k, f] of Object.entries(parties)) {
    const a = before[k];
    const b = f();
    if (a !== undefined && b !== undefined && result.count > 0) cpuPerOp[k] = (b - a) / result.count;
  }
  return { ...result, cpuPerOp };
}

export const cpuText = (c: Record<string, number>) =>
  Object.entries(c)
    .map(([k, v]) => `${k} ${v.toFixed(2)}`)
    .join(', ');
