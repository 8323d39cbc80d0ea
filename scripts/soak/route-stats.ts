import { fmt, quantile } from '../../bench/stats.ts';

/** One route's (or flow's) figures over a phase. */
export interface RouteFigures {
  route: string;
  count: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

interface RouteRecord {
  latencies: number[];
  errors: number;
  /** The first few errors, word for word, to say what went wrong. */
  samples: string[];
}

const SAMPLES_KEPT = 5;

/**
 * Requests of one phase by route (method and route template), and flows (several requests making
 * one thing a user does, e.g. an export from request to download) by name: the time of each,
 * answered or not, and the errors. Throughput is over the phase's whole time, from construction
 * to `stop()`.
 */
export class RouteStats {
  readonly #routes = new Map<string, RouteRecord>();
  readonly #flows = new Map<string, RouteRecord>();
  readonly #started = performance.now();
  #stopped: number | undefined;

  /** One request: its time, and what went wrong if it is an error. */
  record(route: string, ms: number, error?: string): void {
    add(this.#routes, route, ms, error);
  }

  /** One flow: from its first request to its last answer. */
  flow(name: string, ms: number, error?: string): void {
    add(this.#flows, name, ms, error);
  }

  stop(): void {
    this.#stopped ??= performance.now();
  }

  get seconds(): number {
    return ((this.#stopped ?? performance.now()) - this.#started) / 1000;
  }

  get errors(): number {
    let n = 0;
    for (const r of [...this.#routes.values(), ...this.#flows.values()]) n += r.errors;
    return n;
  }

  figures(): RouteFigures[] {
    return figures(this.#routes, this.seconds);
  }

  /** The routes' table with a total line, the flows' table, then the kept errors. */
  report(): string[] {
    const routes = figures(this.#routes, this.seconds);
    const flows = figures(this.#flows, this.seconds);
    const width = Math.max(36, ...[...routes, ...flows].map((r) => r.route.length));
    const line = (route: string, count: string, rps: string, p50: string, p99: string, errors: string) =>
      `${route.padEnd(width)} ${count.padStart(8)} ${rps.padStart(8)} ${p50.padStart(8)} ${p99.padStart(8)} ${errors.padStart(7)}`;
    const row = (r: RouteFigures) =>
      line(r.route, String(r.count), fmt(r.rps), fmt(r.p50), fmt(r.p99), String(r.errors));
    const total = routes.reduce((n, r) => n + r.count, 0);
    const errors = routes.reduce((n, r) => n + r.errors, 0);
    const out = [
      line('route', 'count', 'req/s', 'p50 ms', 'p99 ms', 'errors'),
      ...routes.map(row),
      line('all routes', String(total), fmt(total / this.seconds), '', '', String(errors)),
    ];
    if (flows.length) out.push('', line('flow', 'count', 'per s', 'p50 ms', 'p99 ms', 'errors'), ...flows.map(row));
    for (const [route, r] of [...this.#routes, ...this.#flows])
      for (const sample of r.samples) out.push(`  error on ${route}: ${sample}`);
    return out;
  }
}

function add(records: Map<string, RouteRecord>, name: string, ms: number, error: string | undefined): void {
  let r = records.get(name);
  if (!r) {
    r = { latencies: [], errors: 0, samples: [] };
    records.set(name, r);
  }
  r.latencies.push(ms);
  if (error !== undefined) {
    r.errors++;
    if (r.samples.length < SAMPLES_KEPT) r.samples.push(error);
  }
}

function figures(records: Map<string, RouteRecord>, seconds: number): RouteFigures[] {
  return [...records]
    .map(([route, r]) => {
      const sorted = Float64Array.from(r.latencies).sort();
      return {
        route,
        count: sorted.length,
        rps: sorted.length / seconds,
        p50: quantile(sorted, 0.5),
        p99: quantile(sorted, 0.99),
        errors: r.errors,
      };
    })
    .sort((a, b) => a.route.localeCompare(b.route));
}
