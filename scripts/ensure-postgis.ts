import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import pg from 'pg';
import { loadConfig } from '../shared/config.ts';

/**
 * Checks that the PostgreSQL server has PostGIS available. On a Debian machine where we are
 * root, installs the matching `postgresql-<major>-postgis-3` package; otherwise says what to install.
 */
const config = loadConfig();
const admin = new URL(config.DATABASE_URL);
admin.pathname = '/postgres';
const client = new pg.Client({ connectionString: admin.toString() });
try {
  await client.connect();
} catch (error) {
  console.error(`PostgreSQL is not reachable at ${admin.host} (${(error as Error).message}).`);
  console.error('Start it (Debian: pg_ctlcluster 15 main start) or set DATABASE_URL.');
  process.exit(1);
}
const major = (await client.query<{ v: string }>("select current_setting('server_version_num') as v")).rows[0]?.v.slice(
  0,
  2,
);
const available = async () =>
  ((await client.query("select 1 from pg_available_extensions where name = 'postgis'")).rowCount ?? 0) > 0;
if (!(await available())) {
  const pkg = `postgresql-${major}-postgis-3`;
  const local = ['localhost', '127.0.0.1', '[::1]'].includes(admin.hostname);
  if (local && process.getuid?.() === 0 && existsSync('/usr/bin/apt-get')) {
    console.log(`PostGIS is missing: installing ${pkg} with apt-get`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    try {
      execFileSync('apt-get', ['install', '-y', '--no-install-recommends', pkg], { stdio: 'inherit', env });
    } catch {
      execFileSync('apt-get', ['update'], { stdio: 'inherit', env });
      execFileSync('apt-get', ['install', '-y', '--no-install-recommends', pkg], { stdio: 'inherit', env });
    }
  }
  if (!(await available())) {
    console.error(`PostGIS is not available on the PostgreSQL server. Install the package ${pkg}`);
    console.error(`(Debian/Ubuntu: sudo apt-get install ${pkg}) or use the postgis/postgis Docker image.`);
    process.exit(1);
  }
}
await client.end();
