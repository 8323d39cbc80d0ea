import type { ExecutionContext } from 'ava';
import { type RunningApi, startApi } from '../../api/server.ts';
import type { ServiceModule } from '../../api/service-module.ts';
import type { Config } from '../../shared/config.ts';
import type { Role } from '../../shared/db/schema/accounts.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import { freePort } from '../../shared/runtime/free-port.ts';
import { loadConfig } from '../../shared/services/config.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';

export { freePort };

import { createTestAccount, mintToken, type TestAccount } from './tokens.ts';

export interface TestApiOptions {
  env?: Record<string, string>;
  services?: ServiceModule[];
  publicUrl?: boolean;
  logger?: Logger;
}

export interface TestApi {
  url: string;
  api: RunningApi;
  database: TestDatabase;
  config: Config;
  /** fetch relative to the API base URL. */
  fetch: (path: string, init?: RequestInit) => Promise<Response>;
  /** A new account with these roles and a valid bearer token for it. */
  account: (roles?: Role[], fields?: Partial<TestAccount>) => Promise<TestAccount & { token: string }>;
  /** Stops the API and drops its database (for `test.after.always(api.close)`). */
  close: () => Promise<void>;
}

/** Unique per test file, so Redis keys (queues, rate limits) never collide between files. */
export function uniquePrefix(): string {
  return `sbt${process.pid}${Math.random().toString(36).slice(2, 7)}`;
}

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    PORT: '0',
    HOST: '127.0.0.1',
    QUEUE_PREFIX: uniquePrefix(),
    MIGRATE_ON_START: 'false',
    RATE_LIMIT_POINTS: '10000',
    STORAGE_DIR: `/tmp/${uniquePrefix()}`,
    ...overrides,
  });
}

/**
 * Starts the whole API on a fresh database clone; everything is torn down after the file.
 * `publicUrl: true` picks the port first so PUBLIC_URL (the OpenID issuer) is the server's real URL;
 * `logger` replaces the silent one (a test reading the API's log lines).
 */
export async function startTestApi(t: ExecutionContext | null, options: TestApiOptions = {}): Promise<TestApi> {
  const database = await createTestDatabase();
  const port = options.publicUrl ? await freePort() : undefined;
  const config = testConfig({
    DATABASE_URL: database.url,
    ...(port ? { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` } : {}),
    ...options.env,
  });
  const api = await startApi(config, {
    ...(options.services ? { services: options.services } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  });
  const teardown = async () => {
    await api.close();
    await database.drop();
  };
  t?.teardown(teardown);
  return {
    url: api.url,
    api,
    database,
    config,
    close: teardown,
    fetch: (path, init) => fetch(`${api.url}${path}`, init),
    account: async (roles = ['user'], fields = {}) => {
      const account = await createTestAccount(database.db, roles, fields);
      return { ...account, token: await mintToken(database.db, config, account) };
    },
  };
}
