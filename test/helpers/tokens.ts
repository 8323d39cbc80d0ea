import { signAccessToken } from '../../shared/auth/access-token.ts';
import { ensureSigningKeys } from '../../shared/auth/signing-keys.ts';
import type { Config } from '../../shared/config.ts';
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
