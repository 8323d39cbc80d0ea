import { createLogger } from '../../shared/observability/logger.ts';
import { parseOptions, usageError } from '../../shared/runtime/cli.ts';
import { LAUNCHER_STOP_MS, onShutdown } from '../../shared/runtime/shutdown.ts';
import { PostgresReplica } from './postgres-replica.ts';
import { PrivatePostgres } from './postgres-server.ts';

/**
 * `npm run cluster:pg-replica`: a PostgreSQL primary (PostGIS, migrated and seeded) and a
 * streaming replica of it made with `pg_basebackup -R`, each in a temporary folder on its own
 * loopback port, with PostgreSQL 15's Debian binaries (docs/scale-out.md, "Read replica"). It
 * prints the DATABASE_URL and DATABASE_READ_URL to give the API; Ctrl-C stops both and deletes
 * their folders. `--port` and `--replica-port` choose their ports (free ones otherwise), as
 * `cluster:redis -- --port` does; `--primary-port` makes only a replica, of a server already running there.
 * Tests start the same servers (test/scale-read-replica.test.ts).
 */

const USAGE = `usage: npm run cluster:pg-replica -- [--port P] [--replica-port R] [--primary-port P [--primary-host H]]
  A private primary on 127.0.0.1:P and a streaming replica of it on 127.0.0.1:R (default: free
  ports); prints DATABASE_URL and DATABASE_READ_URL. With --primary-port, only a replica, of the
  server on H:P (default host 127.0.0.1), which must let the OS user postgres connect for
  replication without a password (pg_hba.conf "host replication postgres 127.0.0.1/32 trust").
  Run as root or as postgres. Ctrl-C stops what it started, deletes its folders and the
  replica's slot on the primary.`;

const values = parseOptions(
  {
    port: { type: 'string' },
    'replica-port': { type: 'string' },
    'primary-port': { type: 'string' },
    'primary-host': { type: 'string' },
  },
  USAGE,
);
const portOption = (name: 'port' | 'replica-port' | 'primary-port'): number | undefined => {
  const value = values[name];
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65_535)
    usageError(USAGE, `--${name} ${value}: give a port from 1 to 65535`);
  return port;
};
const [port, replicaPort, primaryPort] = [portOption('port'), portOption('replica-port'), portOption('primary-port')];
if (values['primary-host'] !== undefined && primaryPort === undefined)
  usageError(USAGE, '--primary-host needs --primary-port');
if (port !== undefined && primaryPort !== undefined)
  usageError(USAGE, '--port starts a primary; --primary-port uses one already running: give one of them');
if (port !== undefined && port === replicaPort) usageError(USAGE, `--port and --replica-port are both ${port}`);

const primary = primaryPort === undefined ? await PrivatePostgres.create(port) : undefined;
const replica = await PostgresReplica.of(
  primary ?? { port: primaryPort as number, host: values['primary-host'] },
  replicaPort,
);
console.log(
  [
    `Read replica ready in ${replica.dir} (slot ${replica.slot} on the primary; Ctrl-C stops it):`,
    ...(primary ? [`DATABASE_URL=${primary.url}`] : []),
    `DATABASE_READ_URL=${replica.url}`,
  ].join('\n'),
);
// The servers run in their own processes: this one only waits for Ctrl-C (and, exiting, stops them).
const waiting = setInterval(() => {}, 1 << 30);
onShutdown(createLogger('info', 'cluster:pg-replica'), LAUNCHER_STOP_MS, async () => {
  await replica.destroy();
  await primary?.destroy();
  clearInterval(waiting);
});
