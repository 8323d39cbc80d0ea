import { execFile, execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureDatabase } from '../../shared/db/create-database.ts';
import { createDb } from '../../shared/db/database.ts';
import { migrateToLatest } from '../../shared/db/migrate.ts';
import { seedReferentials } from '../../shared/db/referentials.ts';
import { freePort } from '../../shared/runtime/free-port.ts';

const run = promisify(execFile);
const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
// initdb and postgres refuse to run as root: run them as the `postgres` OS user then.
const asRoot = process.getuid?.() === 0;

/** A PostgreSQL program with its arguments, run as `postgres` when this process is root. */
export function command(program: string, args: string[]): [string, string[]] {
  const file = path.join(BIN, program);
  return asRoot ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
}

/** A new temporary directory the OS user postgres owns when we are root (Debian's servers run as it). */
export function postgresDir(prefix = 'sb-pg-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  if (asRoot) {
    const [uid, gid] = ['-u', '-g'].map((flag) => Number(execFileSync('id', [flag, 'postgres']).toString().trim()));
    chownSync(dir, uid as number, gid as number);
  }
  return dir;
}

/**
 * A private PostgreSQL (PostGIS, migrated and seeded) in a temporary directory, on its own
 * port, which a test can stop and start again; the shared server on 5432 is never touched.
 * Durability is off (fsync, full page writes): it only lives for one test file.
 */
export class PrivatePostgres {
  readonly dir: string;
  readonly port: number;
  #running = false;
  readonly #onExit = () => this.#stopNow();

  /** A cluster in `dir/data` served on `port` (see create, and PostgresReplica). */
  protected constructor(dir: string, port: number) {
    this.dir = dir;
    this.port = port;
  }

  /** initdb, start on `port` (unset: a free one), create the `sports` database, migrate and seed. */
  static async create(port?: number): Promise<PrivatePostgres> {
    const dir = postgresDir();
    const server = new PrivatePostgres(dir, port ?? (await freePort()));
    const data = path.join(dir, 'data');
    await run(
      ...command('initdb', [
        '-D',
        data,
        '-U',
        'postgres',
        '-A',
        'trust',
        '-E',
        'UTF8',
        '--locale=C',
        '--no-sync',
        '--no-instructions',
      ]),
    );
    await server.start();
    await ensureDatabase(server.url);
    const { db } = createDb(server.url, 2);
    try {
      await migrateToLatest(db);
      await seedReferentials(db);
    } finally {
      await db.destroy();
    }
    return server;
  }

  /** The `sports` database over TCP, as the API reaches its PostgreSQL. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/sports`;
  }

  async start(): Promise<void> {
    const options = [
      `-p ${this.port}`,
      '-c listen_addresses=127.0.0.1',
      `-c unix_socket_directories=${this.dir}`,
      '-c fsync=off',
      '-c synchronous_commit=off',
      '-c full_page_writes=off',
    ].join(' ');
    await run(
      ...command('pg_ctl', [
        '-D',
        path.join(this.dir, 'data'),
        '-l',
        path.join(this.dir, 'log'),
        '-o',
        options,
        '-w',
        'start',
      ]),
    );
    this.#running = true;
    process.once('exit', this.#onExit);
  }

  /** Fast shutdown: sessions are terminated (57P01), new connections are refused. */
  async stop(): Promise<void> {
    if (!this.#running) return;
    await run(...command('pg_ctl', ['-D', path.join(this.dir, 'data'), '-m', 'fast', '-w', 'stop']));
    this.#running = false;
    process.off('exit', this.#onExit);
  }

  /** Stops the server and removes its files. */
  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** A test process that dies must not leave a postgres behind. */
  #stopNow(): void {
    if (!this.#running) return;
    try {
      execFileSync(...command('pg_ctl', ['-D', path.join(this.dir, 'data'), '-m', 'immediate', 'stop']), {
        stdio: 'ignore',
      });
    } catch {}
  }
}
