import Router from '@koa/router';
import type { Context } from 'koa';
import { requireApiKey } from '../../api/http/api-key.ts';
import { bearerForWrites, requireBearer } from '../../api/http/auth.ts';
import type { ServiceModule } from '../../api/services.ts';
import { signAccessToken } from '../../shared/auth/access-token.ts';
import { ensureSigningKeys } from '../../shared/auth/signing-keys.ts';
import type { Config, ServiceName } from '../../shared/config.ts';
import type { Db } from '../../shared/db/database.ts';
import type { Role } from '../../shared/db/schema/accounts.ts';

export interface TestAccount {
  id: string;
  number: number;
  ldid: string;
  email: string;
  first_name: string;
  last_name: string;
  roles: Role[];
}

export async function createTestAccount(
  db: Db,
  roles: Role[] = ['user'],
  fields: Partial<TestAccount> = {},
): Promise<TestAccount> {
  const n = Math.random().toString(36).slice(2, 8);
  return db
    .insertInto('accounts')
    .values({
      email: fields.email ?? `user-${n}@example.test`,
      first_name: fields.first_name ?? 'Test',
      last_name: fields.last_name ?? `User ${n}`,
      roles,
    })
    .returning(['id', 'number', 'ldid', 'email', 'first_name', 'last_name', 'roles'])
    .executeTakeFirstOrThrow() as Promise<TestAccount>;
}

/** A valid access token for the account, signed with the test database's key. */
export async function mintToken(
  db: Db,
  config: Config,
  account: Pick<TestAccount, 'id' | 'roles' | 'ldid'>,
  overrides: { ttlSeconds?: number; issuer?: string; audience?: string } = {},
): Promise<string> {
  const [key] = await ensureSigningKeys(db);
  if (!key) throw new Error('no signing key');
  return signAccessToken(
    key,
    { sub: account.id, roles: account.roles, ldid: account.ldid },
    {
      issuer: overrides.issuer ?? config.issuer,
      audience: overrides.audience ?? config.AUTH_AUDIENCE,
      ...(overrides.ttlSeconds !== undefined ? { ttlSeconds: overrides.ttlSeconds } : {}),
    },
  );
}

/**
 * Test-only routes guarded like the services: writes need a bearer (places, partners,
 * catalogue), tracking calls need a bearer and x-api-key, the public share only x-api-key.
 */
export function guardedTestService(name: ServiceName = 'tracking'): ServiceModule {
  return {
    name,
    routers: (ctx) => {
      const router = new Router({ prefix: '/test' });
      const who = (c: Context) => ({
        accountId: c.state.principal?.accountId,
        ldid: c.state.principal?.ldid,
        roles: c.state.principal?.roles,
        apiKeyClient: c.state.apiKey?.clientId,
      });
      router.get('/writes', bearerForWrites(ctx.verifier), (c) => {
        c.body = { ok: true };
      });
      router.post('/writes', bearerForWrites(ctx.verifier), (c) => {
        c.status = 201;
        c.body = who(c);
      });
      router.get('/tracking', requireApiKey(ctx.db), requireBearer(ctx.verifier), (c) => {
        c.body = who(c);
      });
      router.get('/share', requireApiKey(ctx.db), (c) => {
        c.body = who(c);
      });
      return [router];
    },
  };
}
