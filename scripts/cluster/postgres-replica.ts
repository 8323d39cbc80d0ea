import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../shared/runtime/free-port.ts';
import { command, PrivatePostgres, postgresDir } from './postgres-server.ts';

const run = promisify(execFile);

/** Where a primary listens: a private one, or any server that grants `postgres` replication. */
export interface PrimaryAddress {
  host?: string;
  port: number;
}

/**
 * A streaming replica of a PostgreSQL primary (hot standby, read-only), made with
 * `pg_basebackup -R` in a temporary directory and served on its own loopback port. It keeps a
 * physical replication slot on the primary, so a replica stopped for a while can catch up; the
 * slot is dropped by destroy().
 */
export class PostgresReplica extends PrivatePostgres {
  readonly primary: Required<PrimaryAddress>;
  readonly slot: string;

  private constructor(dir: string, port: number, primary: Required<PrimaryAddress>, slot: string) {
    super(dir, port);
    this.primary = primary;
    this.slot = slot;
  }

  /** Copies the primary (its WAL streamed during the copy) and starts the standby on `port` (unset: a free one). */
  static async of(primary: PrimaryAddress, port?: number): Promise<PostgresReplica> {
    const dir = postgresDir();
    port ??= await freePort();
    const address = { host: primary.host ?? '127.0.0.1', port: primary.port };
    const slot = `replica_${port}`;
    // -R writes standby.signal and primary_conninfo (with the slot); -C -S creates the slot.
    await run(
      ...command('pg_basebackup', [
        '-h',
        address.host,
        '-p',
        String(address.port),
        '-U',
        'postgres',
        '-D',
        path.join(dir, 'data'),
        '-R',
        '-X',
        'stream',
        '-C',
        '-S',
        slot,
        '--checkpoint=fast',
        '--no-sync',
      ]),
    );
    const replica = new PostgresReplica(dir, port, address, slot);
    await replica.start();
    return replica;
  }

  /** Waits until the replica has replayed everything the primary has written now (or throws after `timeoutMs`). */
  async caughtUp(timeoutMs = 30_000): Promise<void> {
    const primary = new pg.Client({ connectionString: this.#primaryUrl() });
    const replica = new pg.Client({ connectionString: this.url });
    try {
      await Promise.all([primary.connect(), replica.connect()]);
      const target = (await primary.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn')).rows[0]?.lsn;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const { rows } = await replica.query<{ reached: boolean }>(
          'select pg_last_wal_replay_lsn() >= $1::pg_lsn as reached',
          [target],
        );
        if (rows[0]?.reached) return;
        if (Date.now() > deadline)
          throw new Error(`replica on ${this.port} did not replay ${target} in ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      // A client that connected while the other could not is closed too (a server stopping must not find it).
      await Promise.all([primary.end().catch(() => {}), replica.end().catch(() => {})]);
    }
  }

  /** Stops the replica, removes its files and drops its slot on the primary (if the primary answers). */
  override async destroy(): Promise<void> {
    await super.destroy();
    const primary = new pg.Client({ connectionString: this.#primaryUrl() });
    try {
      await primary.connect();
      await primary.query('select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = $1', [
        this.slot,
      ]);
    } catch {
      // The primary is gone (a test's private one, destroyed first): so is the slot.
    } finally {
      await primary.end().catch(() => {});
    }
  }

  #primaryUrl(): string {
    return `postgres://postgres@${this.primary.host}:${this.primary.port}/sports`;
  }
}
