import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../shared/services/config.ts';

/**
 * Preflight of `npm start` (`start`: PostGIS) and `npm test` (`test`: PostGIS, Chromium for the
 * browser tests, xmllint from libxml2-utils, gpxpy and GPSBabel for the tracking reference corpus,
 * and the cluster tools). Run as root on a Debian machine, it installs the
 * missing Debian packages with apt-get (PostGIS only when the database runs on this machine);
 * otherwise it stops at once, naming the packages to install and the command.
 */

interface Requirement {
  /** Debian package that provides it. */
  pkg: string;
  /** What it is for, in the message. */
  what: string;
  present: () => boolean | Promise<boolean>;
  /** False when installing the package here would not help (remote database, custom CHROMIUM_PATH). */
  installable: boolean;
  /** Said instead of the install command when it is not installable. */
  otherwise?: string;
}

const mode = process.argv[2];
if (mode !== 'start' && mode !== 'test') {
  console.error('usage: node scripts/ensure-system.ts start|test');
  process.exit(2);
}

const executable = (file: string) => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};
const onPath = (command: string) =>
  (process.env.PATH ?? '').split(path.delimiter).some((dir) => dir !== '' && executable(path.join(dir, command)));

/** Debian's python3 (not a pyenv or venv one first on PATH) can import gpxpy. */
const gpxpyPresent = () => {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import gpxpy'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

const requirements: Requirement[] = [];
const problems: string[] = [];

const config = loadConfig();
const admin = new URL(config.DATABASE_URL);
admin.pathname = '/postgres';
const client = new pg.Client({ connectionString: admin.toString() });
let connected = false;
try {
  await client.connect();
  connected = true;
} catch (error) {
  problems.push(
    `PostgreSQL is not reachable at ${admin.host} (${(error as Error).message}).`,
    'Start it (Debian: pg_ctlcluster 15 main start) or set DATABASE_URL.',
  );
}
if (connected) {
  const version = await client.query<{ v: string }>("select current_setting('server_version_num') as v");
  const major = Math.floor(Number(version.rows[0]?.v) / 10000);
  const local = ['localhost', '127.0.0.1', '[::1]'].includes(admin.hostname);
  requirements.push({
    pkg: `postgresql-${major}-postgis-3`,
    what: 'PostGIS',
    present: async () =>
      ((await client.query("select 1 from pg_available_extensions where name = 'postgis'")).rowCount ?? 0) > 0,
    installable: local,
    otherwise: `PostGIS is missing on the PostgreSQL server at ${admin.host}: install postgresql-${major}-postgis-3 there (or use the postgis/postgis Docker image).`,
  });
}
if (mode === 'test') {
  // The browser tests launch CHROMIUM_PATH (test/helpers/browser.ts), Debian's chromium by default.
  const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  requirements.push(
    {
      pkg: 'chromium',
      what: 'Chromium, for the browser tests',
      present: () => executable(chromium),
      installable: chromium === '/usr/bin/chromium',
      otherwise: `CHROMIUM_PATH=${chromium} is not an executable: point it at a Chromium or unset it.`,
    },
    {
      pkg: 'libxml2-utils',
      what: 'xmllint, to validate XML exports',
      present: () => onPath('xmllint'),
      installable: true,
    },
    {
      pkg: 'haproxy',
      what: 'HAProxy, for the balancer test (test/scale-balancer.test.ts)',
      present: () => onPath('haproxy') || executable('/usr/sbin/haproxy'),
      installable: true,
    },
    {
      pkg: 'pgbouncer',
      what: 'PgBouncer, for the balancer test (test/scale-balancer.test.ts)',
      present: () => onPath('pgbouncer') || executable('/usr/sbin/pgbouncer'),
      installable: true,
    },
    {
      pkg: 'redis-server',
      what: 'redis-server and redis-cli, for the private Redis servers and the Redis Cluster of the tests',
      present: () => onPath('redis-server') && onPath('redis-cli'),
      installable: true,
    },
    {
      pkg: 'prometheus',
      what: 'promtool, to check the alert rules and run their unit tests (test/metrics-rules.test.ts)',
      present: () => onPath('promtool'),
      installable: true,
    },
    {
      pkg: 'python3-gpxpy',
      what: 'gpxpy, the reference the tracking corpus test compares distances, moving time and climbs with (test/tracking-reference-corpus.test.ts)',
      present: () => executable('/usr/bin/python3') && gpxpyPresent(),
      installable: true,
    },
    {
      pkg: 'gpsbabel',
      what: 'GPSBabel, which converts TCX and FIT files to GPX for gpxpy in the tracking corpus test',
      present: () => onPath('gpsbabel'),
      installable: true,
    },
    {
      pkg: 'postgresql-client-15',
      what: 'pg_basebackup, for the read replica test (test/scale-read-replica.test.ts)',
      present: () => executable(path.join(process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin', 'pg_basebackup')),
      installable: true,
    },
  );
}

const missing = async (list: Requirement[]) => {
  const result: Requirement[] = [];
  for (const requirement of list) if (!(await requirement.present())) result.push(requirement);
  return result;
};

let absent = await missing(requirements);
const toInstall = absent.filter((r) => r.installable).map((r) => r.pkg);
const canInstall = process.getuid?.() === 0 && existsSync('/usr/bin/apt-get');
if (toInstall.length > 0 && canInstall) {
  console.log(`npm ${mode}: installing the missing Debian packages with apt-get: ${toInstall.join(' ')}`);
  // Wait for another apt/dpkg run (an engineer's concurrent npm test) instead of failing on its lock.
  const install = ['install', '-y', '-q', '--no-install-recommends', '-o', 'DPkg::Lock::Timeout=600', ...toInstall];
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    execFileSync('apt-get', install, { stdio: 'inherit', env });
  } catch {
    // Stale package lists are the usual cause: refresh them once and retry.
    try {
      execFileSync('apt-get', ['update', '-q'], { stdio: 'inherit', env });
      execFileSync('apt-get', install, { stdio: 'inherit', env });
    } catch {}
  }
  absent = await missing(absent);
}
if (connected) await client.end();

const installable = absent.filter((r) => r.installable);
if (installable.length > 0) {
  const names = installable.map((r) => r.pkg).join(' ');
  problems.push(
    `npm ${mode} needs Debian packages that are not installed: ${installable.map((r) => `${r.pkg} (${r.what})`).join(', ')}.`,
    canInstall
      ? 'apt-get could not install them: see its output above.'
      : `Install them as root: apt-get install -y --no-install-recommends ${names}\n(npm ${mode} installs them itself when it runs as root on Debian.)`,
  );
}
for (const requirement of absent)
  if (!requirement.installable && requirement.otherwise) problems.push(requirement.otherwise);
if (problems.length > 0) {
  for (const line of problems) console.error(line);
  process.exit(1);
}
