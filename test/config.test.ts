import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import test from 'ava';
import { ConfigError, envSchema, loadConfig, QUEUE_NAMES, SERVICE_NAMES } from '../shared/config.ts';

test('defaults suit a local machine', (t) => {
  const config = loadConfig({});
  t.is(config.PORT, 3000);
  t.is(config.DATABASE_URL, 'postgres://root@127.0.0.1:5432/sports');
  t.is(config.REDIS_URL, 'redis://127.0.0.1:6379');
  t.deepEqual(config.SERVICES, [...SERVICE_NAMES]);
  t.deepEqual(config.WORKER_QUEUES, [...QUEUE_NAMES]);
  t.is(config.issuer, 'http://localhost:3000');
  t.is(config.bodyLimitBytes, 1024 * 1024);
  t.is(config.corsOrigins, '*');
});

test('PUBLIC_URL follows PORT when unset, so the issuer is the URL the server answers on', (t) => {
  const moved = loadConfig({ PORT: '3100' });
  t.is(moved.PUBLIC_URL, 'http://localhost:3100');
  t.is(moved.issuer, 'http://localhost:3100');
  t.is(loadConfig({ PORT: '3100', PUBLIC_URL: 'https://api.example.test/' }).PUBLIC_URL, 'https://api.example.test');
  t.is(loadConfig({ PORT: '3100', AUTH_ISSUER: 'https://id.example.test' }).issuer, 'https://id.example.test');
  // PORT=0 picks a free port at listen time: the default stays the usual one.
  t.is(loadConfig({ PORT: '0' }).PUBLIC_URL, 'http://localhost:3000');
});

test('.env.example names only configuration variables, and its values parse', (t) => {
  const example = parseEnv(readFileSync(new URL('../.env.example', import.meta.url), 'utf8'));
  const known = new Set(Object.keys(envSchema.shape));
  t.true(Object.keys(example).length >= 4);
  for (const name of Object.keys(example)) t.true(known.has(name), `${name} is not a config variable`);
  t.notThrows(() => loadConfig(example));
});

test('the npm scripts that run the system read .env and exec their last node (signals reach it); the test runner does not', (t) => {
  const { scripts } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    scripts: Record<string, string>;
  };
  for (const name of ['start', 'api', 'worker', 'migrate', 'seed', 'account', 'records:recompute', 'jobs']) {
    const commands = (scripts[name] ?? '').split('&&');
    for (const command of commands.slice(0, -1))
      t.regex(command, /^\s*node --env-file-if-exists=\.env /, `${name}: ${command}`);
    // npm forwards SIGTERM and SIGINT to its shell: without exec the shell dies and node runs on.
    t.regex(commands.at(-1) ?? '', /^\s*exec node --env-file-if-exists=\.env /, `${name}: exec`);
  }
  t.notRegex(scripts.test ?? '', /env-file/);
});

test('lists accept a subset, and "all"', (t) => {
  t.deepEqual(loadConfig({ SERVICES: 'places, tracking' }).SERVICES, ['places', 'tracking']);
  t.deepEqual(loadConfig({ WORKER_QUEUES: 'all' }).WORKER_QUEUES, [...QUEUE_NAMES]);
  t.deepEqual(loadConfig({ CORS_ORIGINS: 'https://a.example,https://b.example' }).corsOrigins, [
    'https://a.example',
    'https://b.example',
  ]);
});

test('TRUST_PROXY: false, true (one proxy hop) or a number of trusted hops', (t) => {
  for (const [value, hops] of [
    [undefined, 0],
    ['false', 0],
    ['no', 0],
    ['0', 0],
    ['true', 1],
    ['yes', 1],
    ['1', 1],
    ['2', 2],
    [' 3 ', 3],
    ['10', 10],
  ] as const) {
    const config = loadConfig(value === undefined ? {} : { TRUST_PROXY: value });
    t.is(config.trustProxyHops, hops, String(value));
    t.is(config.TRUST_PROXY, hops > 0, String(value));
  }
  const error = t.throws(() => loadConfig({ TRUST_PROXY: 'all' }), { instanceOf: ConfigError });
  t.regex(
    error?.message ?? '',
    /TRUST_PROXY: "all" is not false, true \(one proxy\) or a number of trusted proxy hops/,
  );
});

test('a bad value stops the start with a message naming the variable', (t) => {
  for (const [name, value] of [
    ['PORT', 'eighty'],
    ['DATABASE_URL', 'not a url'],
    ['SERVICES', 'places,weather'],
    ['WORKER_QUEUES', 'emails'],
    ['RATE_LIMIT_ENABLED', 'maybe'],
    ['BODY_LIMIT', 'lots'],
    ['LOG_LEVEL', 'loud'],
    ['TRUST_PROXY', 'maybe'],
    ['TRUST_PROXY', '-1'],
    ['TRUST_PROXY', '1.5'],
    ['TRUST_PROXY', '11'],
    ['DATABASE_READ_URL', 'replica'],
    ['DATABASE_READ_MAX_LAG_MS', '-5'],
    ['DATABASE_PREPARED_STATEMENTS', 'sometimes'],
    ['REDIS_CLUSTER_NODES', '127.0.0.1'],
    ['REDIS_CLUSTER_NODES', 'a:1,b:99999'],
  ] as const) {
    const error = t.throws(() => loadConfig({ [name]: value }), { instanceOf: ConfigError });
    t.regex(error?.message ?? '', new RegExp(`${name}:`), name);
  }
});

test('docker-compose.yml only sets variables the config module knows', (t) => {
  const compose = readFileSync(new URL('../docker-compose.yml', import.meta.url), 'utf8');
  const known = new Set(Object.keys(envSchema.shape));
  const names = new Set<string>();
  for (const m of compose.matchAll(/^\s+([A-Z][A-Z0-9_]+):/gm)) if (m[1]) names.add(m[1]);
  for (const ignored of ['POSTGRES_USER', 'POSTGRES_PASSWORD', 'POSTGRES_DB']) names.delete(ignored);
  t.true(names.size >= 10, `found ${[...names].join(', ')}`);
  for (const name of names) t.true(known.has(name), `${name} is not a config variable`);
  // And every value parses.
  const env: Record<string, string> = {};
  for (const m of compose.matchAll(/^\s+([A-Z][A-Z0-9_]+): "?([^"\n]*)"?$/gm))
    if (m[1] && known.has(m[1]) && !m[2]?.startsWith('${')) env[m[1]] = m[2] ?? '';
  t.notThrows(() => loadConfig(env));
  // The cookie key is the user's own, from the environment: the file holds none anyone could read.
  t.regex(compose, /^\s+COOKIE_KEYS: \$\{COOKIE_KEYS:\?[^}]*openssl rand -base64 48\)?\}$/m);
  t.regex(compose, /--appendonly", "yes"/);
  t.regex(compose, /--appendfsync", "everysec"/);
  t.regex(compose, /--maxmemory-policy", "noeviction"/);
});

test('the README documents every configuration variable', (t) => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  for (const name of Object.keys(envSchema.shape)) t.true(readme.includes(`| \`${name}\` |`), name);
});
