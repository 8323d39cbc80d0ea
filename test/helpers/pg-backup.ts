import pg from 'pg';
import { runCommand, type ScriptRun } from './cli.ts';
import { SERVER_URL } from './db.ts';

/** `pg_dump -Fc` of a database to `file`, as docs/operations.md says. */
export function dump(url: string, file: string): Promise<ScriptRun> {
  return runCommand('pg_dump', ['-Fc', '--no-owner', '-d', url, '-f', file]);
}

/** `pg_restore` into an existing empty database, stopping at the first error. */
export function restore(url: string, file: string): Promise<ScriptRun> {
  return runCommand('pg_restore', ['--exit-on-error', '--no-owner', '-d', url, file]);
}

/** A new, empty database on the test server (named after this process, so a dead run's is dropped: db.ts). */
export async function emptyDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `sb_test_${process.pid}_restore_${Math.random().toString(36).slice(2, 8)}`;
  const admin = async (query: string) => {
    const client = new pg.Client({ connectionString: `${SERVER_URL}/postgres` });
    await client.connect();
    try {
      await client.query(query);
    } finally {
      await client.end();
    }
  };
  await admin(`create database ${name}`);
  return { url: `${SERVER_URL}/${name}`, drop: () => admin(`drop database if exists ${name} with (force)`) };
}
