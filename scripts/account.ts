import { parseArgs } from 'node:util';
import { ensureAccountWithRoles } from '../shared/accounts/accounts.ts';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { registerClient } from '../shared/accounts/clients.ts';
import { MIN_PASSWORD_LENGTH } from '../shared/accounts/passwords.ts';
import { signAccessToken } from '../shared/auth/access-token.ts';
import { ensureSigningKeys } from '../shared/auth/signing-keys.ts';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { ROLES, type Role } from '../shared/db/schema/accounts.ts';
import { runCli } from '../shared/runtime/cli.ts';

const USAGE = `Usage: npm run account -- --email <email> [--role user|staff|partner]... [options]

Creates the account (or finds it by email), adds the roles, and prints as JSON a valid access
token (a bearer JWT for every service) and a new API key (x-api-key, tracking).

Options:
  --email <email>         account email (required)
  --role <role>           user, staff or partner; repeat or separate with commas (default user)
  --password <password>   set the password (to sign in on the login page), at least ${MIN_PASSWORD_LENGTH} characters
  --first-name <name>     first name of a new account
  --last-name <name>      last name of a new account
  --client-id <id>        issue the API key for this existing client (default: a new client "cli:<email>")
  --ttl <seconds>         access token lifetime (default 900, at most 86400)
  --help                  this text`;

const usageError = (message: string): never => {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(2);
};

function parse() {
  return parseArgs({
    options: {
      email: { type: 'string' },
      role: { type: 'string', multiple: true },
      password: { type: 'string' },
      'first-name': { type: 'string' },
      'last-name': { type: 'string' },
      'client-id': { type: 'string' },
      ttl: { type: 'string' },
      help: { type: 'boolean' },
    },
    strict: true,
  }).values;
}
function parseOrExit(): ReturnType<typeof parse> {
  try {
    return parse();
  } catch (error) {
    return usageError((error as Error).message);
  }
}
const args = parseOrExit();
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
const email = args.email?.trim() ?? '';
if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) usageError('--email must be an email address');
const roles = (args.role ?? ['user'])
  .flatMap((r) => r.split(','))
  .map((r) => r.trim())
  .filter(Boolean);
for (const role of roles)
  if (!(ROLES as readonly string[]).includes(role)) usageError(`unknown role "${role}" (allowed: ${ROLES.join(', ')})`);
if (args.password !== undefined && args.password.length < MIN_PASSWORD_LENGTH)
  usageError(`--password must have at least ${MIN_PASSWORD_LENGTH} characters`);
const ttl = Number(args.ttl ?? 900);
if (!Number.isInteger(ttl) || ttl < 60 || ttl > 86_400) usageError('--ttl must be an integer between 60 and 86400');

await runCli(async (config) => {
  const { db } = createDb(config.DATABASE_URL, 2);
  try {
    await migrateToLatest(db);
    const { account, created } = await ensureAccountWithRoles(db, {
      email,
      roles: roles as Role[],
      ...(args.password ? { password: args.password } : {}),
      ...(args['first-name'] ? { first_name: args['first-name'] } : {}),
      ...(args['last-name'] ? { last_name: args['last-name'] } : {}),
    });
    const [key] = await ensureSigningKeys(db);
    if (!key) throw new Error('no signing key');
    const accessToken = await signAccessToken(
      key,
      { sub: account.id, roles: account.roles, ldid: account.ldid, email: account.email, user_id: account.number },
      { issuer: config.issuer, audience: config.AUTH_AUDIENCE, ttlSeconds: ttl },
    );
    let clientId = args['client-id'];
    let client: { client_id: string; client_secret: string } | undefined;
    if (clientId) {
      const exists = await db
        .selectFrom('oauth_clients')
        .select('id')
        .where('id', '=', clientId)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      if (!exists) usageError(`no live client "${clientId}"`);
    } else {
      const registered = await registerClient(db, {
        client_name: `cli:${account.email}`,
        redirect_uris: ['http://127.0.0.1/callback'],
        ownerAccountId: account.id,
      });
      clientId = registered.client_id;
      client = { client_id: registered.client_id, client_secret: registered.client_secret };
    }
    const apiKey = await issueApiKey(db, clientId as string, 'npm run account');
    const out = {
      account: {
        id: account.id,
        email: account.email,
        roles: account.roles,
        ldid: account.ldid,
        user_id: account.number,
        created,
      },
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: ttl,
      api_key: apiKey.api_key,
      api_key_id: apiKey.id,
      client_id: clientId,
      ...(client ? { client_secret: client.client_secret } : {}),
    };
    console.log(JSON.stringify(out, null, 2));
  } finally {
    await db.destroy();
  }
});
