import pg from 'pg';
import type { DbHandle } from './database.ts';

/** The two Redis commands the write markers need (a client or a cluster). */
export interface MarkerStore {
  set(key: string, value: string, mode: 'PX', milliseconds: number): Promise<unknown>;
  exists(key: string): Promise<number>;
}

export interface ReadRouterOptions {
  /** Where the write markers live (the API's fail-fast Redis connection). */
  markers: MarkerStore;
  /** Prefix of the marker keys (`<prefix>:rw:<account id>`). */
  keyPrefix: string;
  /** A replica further behind the primary than this is not read from. */
  maxLagMs: number;
  /** How often the replica's position is checked. */
  pollMs?: number;
  /** Whether a failed replica read is worth running again on the primary (the replica is unreachable). */
  isUnavailable: (error: unknown) => boolean;
  /** Told when the replica starts or stops being used, and why. */
  onChange?: (used: boolean, reason: string) => void;
}

/** Where a read went and why: what the state of the router says (tests, logs). */
export interface ReplicaState {
  used: boolean;
  reason: string;
  /** Upper bound of the replica's delay at the last check (ms); undefined when unknown. */
  lagMs: number | undefined;
}

/** A primary position and when it was read: the replica is at most `now - at` behind once it replays `lsn`. */
interface Sample {
  at: number;
  lsn: bigint;
}

/** `16/B374D848` (a pg_lsn) as a number. */
export function parseLsn(text: string): bigint {
  const [high, low] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
}

/**
 * Sends the reads that may lag (searches, collection reads) to a streaming replica, and the rest
 * to the primary (docs/scale-out.md, "Read replica"):
 * - the replica is used while its last check (once per `pollMs`) found it answering and at most
 *   `maxLagMs` behind; a read it fails for want of a connection runs again on the primary;
 * - a caller who wrote within `stickyMs` (`maxLagMs` plus two checks: the most a used replica can
 *   be behind) reads from the primary: each write sets a marker in Redis, which every API process
 *   behind the balancer sees.
 * Without a replica every read goes to the primary and no marker is written.
 */
export class ReadRouter {
  readonly primary: DbHandle;
  readonly replica: DbHandle | undefined;
  readonly stickyMs: number;
  readonly #options: ReadRouterOptions & { pollMs: number };
  /** Its own connection for the checks, so that they never wait behind the reads. */
  readonly #probe: pg.Pool | undefined;
  #samples: Sample[] = [];
  #state: ReplicaState = { used: false, reason: 'not checked yet', lagMs: undefined };
  #checkedAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #checking: Promise<void> | undefined;

  constructor(primary: DbHandle, replica: { handle: DbHandle; url: string } | undefined, options: ReadRouterOptions) {
    this.primary = primary;
    this.replica = replica?.handle;
    this.#options = { pollMs: 1_000, ...options };
    this.stickyMs = options.maxLagMs + 2 * this.#options.pollMs;
    if (replica) {
      const wait = this.#options.pollMs;
      this.#probe = new pg.Pool({
        connectionString: replica.url,
        max: 1,
        connectionTimeoutMillis: wait,
        query_timeout: wait,
        application_name: 'sports-api:read-check',
      });
      this.#probe.on('error', () => {});
    }
  }

  /** Checks the replica now, then once per pollMs; resolves after the first check. */
  async start(): Promise<void> {
    if (!this.replica || this.#timer) return;
    await this.check();
    this.#timer = setInterval(() => void this.check(), this.#options.pollMs);
    this.#timer.unref();
  }

  /** Stops the checks and closes the replica's pools (the primary's is its owner's). */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#checking;
    await this.#probe?.end();
    await this.replica?.db.destroy();
  }

  /** Whether reads go to the replica now, and why. */
  get state(): ReplicaState {
    return this.#usable() ? this.#state : { ...this.#state, used: false, reason: this.#staleReason() };
  }

  /**
   * Runs a read on the replica when it is fresh and `writer` (an account id) has not written
   * lately, else on the primary. The read must not write: it may run twice (replica, then primary).
   */
  async read<T>(writer: string | undefined, query: (handle: DbHandle) => Promise<T>): Promise<T> {
    const replica = this.replica;
    if (!replica || !this.#usable() || (writer !== undefined && (await this.#wroteLately(writer))))
      return query(this.primary);
    try {
      return await query(replica);
    } catch (error) {
      if (!this.#options.isUnavailable(error)) throw error;
      this.#set({ used: false, reason: `a read failed: ${describe(error)}`, lagMs: undefined });
      return query(this.primary);
    }
  }

  /** Records that `writer` (an account id) wrote: their reads stay on the primary for stickyMs. */
  async noteWrite(writer: string): Promise<void> {
    if (!this.replica) return;
    // Redis down: the reads of every writer go to the primary until it is back (#wroteLately).
    await this.#options.markers.set(this.#markerKey(writer), '1', 'PX', this.stickyMs).catch(() => {});
  }

  /** One check of the replica's position against the primary's (also run by the timer). */
  check(): Promise<void> {
    this.#checking ??= this.#check().finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  async #check(): Promise<void> {
    const probe = this.#probe;
    if (!probe) return;
    const now = Date.now();
    try {
      // The primary's position first: a replica that replayed it has every commit acknowledged before `now`.
      const primary = await this.primary.pool.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn');
      const lsn = primary.rows[0]?.lsn;
      if (lsn) this.#samples.push({ at: now, lsn: parseLsn(lsn) });
    } catch {
      // The primary is down: the replica is judged by the positions read before.
    }
    const keepFrom = now - this.#options.maxLagMs - 2 * this.#options.pollMs;
    this.#samples = this.#samples.filter((s) => s.at >= keepFrom);
    try {
      const { rows } = await probe.query<{ standby: boolean; lsn: string | null }>(
        'select pg_is_in_recovery() as standby, pg_last_wal_replay_lsn()::text as lsn',
      );
      const row = rows[0];
      if (!row?.standby || !row.lsn) {
        this.#set({ used: false, reason: 'DATABASE_READ_URL is not a standby', lagMs: undefined });
        return;
      }
      const replayed = parseLsn(row.lsn);
      const reached = this.#samples.filter((s) => s.lsn <= replayed).at(-1);
      this.#checkedAt = Date.now();
      if (!reached) {
        this.#set({ used: false, reason: `more than ${this.#options.maxLagMs} ms behind`, lagMs: undefined });
        return;
      }
      const lagMs = this.#checkedAt - reached.at;
      this.#set(
        lagMs <= this.#options.maxLagMs
          ? { used: true, reason: 'fresh', lagMs }
          : { used: false, reason: `${lagMs} ms behind`, lagMs },
      );
    } catch (error) {
      this.#set({ used: false, reason: `unreachable: ${describe(error)}`, lagMs: undefined });
    }
  }

  /** A check that has not ended for two periods (a replica that hangs) does not vouch for it. */
  #usable(): boolean {
    return this.#state.used && Date.now() - this.#checkedAt <= 2 * this.#options.pollMs;
  }

  #staleReason(): string {
    return this.#state.used ? 'no recent check' : this.#state.reason;
  }

  #set(state: ReplicaState): void {
    const was = this.#state;
    this.#state = state;
    if (state.used !== was.used) this.#options.onChange?.(state.used, state.reason);
  }

  #markerKey(writer: string): string {
    return `${this.#options.keyPrefix}:rw:${writer}`;
  }

  async #wroteLately(writer: string): Promise<boolean> {
    // Without Redis nobody can tell: the primary answers.
    return (await this.#options.markers.exists(this.#markerKey(writer)).catch(() => 1)) > 0;
  }
}

function describe(error: unknown): string {
  if (typeof error !== 'object' || error === null) return String(error);
  const e = error as { code?: unknown; message?: unknown };
  return typeof e.code === 'string' ? e.code : typeof e.message === 'string' ? e.message : 'error';
}
