import { parseArgs } from 'node:util';
import {
  type AccountChanges,
  ensureAccountWithRoles,
  ForeignAccountError,
  findAccountByEmail,
  foreignChangeRefusal,
} from '../shared/accounts/accounts.ts';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { findClient, registerClient } from '../shared/accounts/clients.ts';
import { MIN_PASSWORD_LENGTH } from '../shared/accounts/passwords.ts';
import { endAccountSessions, setAccountDisabled } from '../shared/accounts/revocation.ts';
import { listAccounts, setAccountRoles } from '../shared/accounts/staff-accounts.ts';
import { issueOperatorToken } from '../shared/auth/operator-tokens.ts';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { ROLES, type Role } from '../shared/db/schema/accounts.ts';
import { runCli } from '../shared/runtime/cli.ts';

const USAGE = `Usage: npm run account -- --email <email> [--role user|staff|partner]... [options]
       npm run account -- --list [--role <role>] [--limit <n>] [--after <number>]

Creates the account (or finds it by email), adds the roles, and prints as JSON a valid access
token (a bearer JWT for every service, with every scope) and a new API key (x-api-key, tracking)
of a first-party client. What the command changed is listed under "done".

Options:
  --email <email>         account email (required)
  --role <role>           user, staff or partner; repeat or separate with commas (default user)
  --password <password>   set the password (to sign in on the login page), at least ${MIN_PASSWORD_LENGTH} characters
  --first-name <name>     first name of a new account
  --last-name <name>      last name of a new account
  --client-id <id>        issue the token and API key for this existing client: a first-party one,
                          or one the user allowed (default: a new first-party client "cli:<email>")
  --ttl <seconds>         access token lifetime (default 900, at most 86400)
  --change-existing       allow changing the roles (--role, --set-roles) or the password of an
                          account that was not created by an operator (someone registered it:
                          they may not be who you think); its sessions, grants and tokens are
                          ended, and what changed is said on stderr
  --end-sessions          end every session, grant and token of the account (no new token)
  --disable               disable the account: no sign-in, every token refused (no new token)
  --enable                enable a disabled account again
  --set-roles <roles>     set the account's roles to exactly these (comma-separated; user is
                          always kept), removing the others; its sessions, grants and tokens
                          are ended (no new token)
  --list                  list accounts as JSON (id, number, email, names, roles, disabled), in
                          creation order; with --role only those holding it; --limit (default
                          50, at most 200) per page, --after <number> for the next page
  --help                  this text

Any change of roles or password ends the account's sessions, grants and tokens issued before.`;

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
      'change-existing': { type: 'boolean' },
      'end-sessions': { type: 'boolean' },
      disable: { type: 'boolean' },
      enable: { type: 'boolean' },
      'set-roles': { type: 'string' },
      list: { type: 'boolean' },
      limit: { type: 'string' },
      after: { type: 'string' },
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
/** Roles named in options (repeated, or comma-separated), each checked. */
function rolesOf(values: string[]): Role[] {
  const named = values
    .flatMap((r) => r.split(','))
    .map((r) => r.trim())
    .filter(Boolean);
  for (const role of named)
    if (!(ROLES as readonly string[]).includes(role))
      usageError(`unknown role "${role}" (allowed: ${ROLES.join(', ')})`);
  return named as Role[];
}
if (args.list) await listAndExit();
const email = args.email?.trim() ?? '';
if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) usageError('--email must be an email address');
const roles = rolesOf(args.role ?? ['user']);
const newRoles = args['set-roles'] === undefined ? undefined : rolesOf([args['set-roles']]);
if (args.password !== undefined && args.password.length < MIN_PASSWORD_LENGTH)
  usageError(`--password must have at least ${MIN_PASSWORD_LENGTH} characters`);
const ttl = Number(args.ttl ?? 900);
if (!Number.isInteger(ttl) || ttl < 60 || ttl > 86_400) usageError('--ttl must be an integer between 60 and 86400');
const accountActions = [args.disable, args.enable, args['end-sessions'], newRoles].filter(Boolean).length;
if (accountActions > 1) usageError('give at most one of --disable, --enable, --end-sessions and --set-roles');

/** `--list`: a page of accounts as JSON, then exit. */
async function listAndExit(): Promise<never> {
  const limit = Number(args.limit ?? 50);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) usageError('--limit must be an integer from 1 to 200');
  const after = args.after === undefined ? undefined : Number(args.after);
  if (after !== undefined && (!Number.isInteger(after) || after < 0)) usageError('--after must be a number (a `next`)');
  const [role, ...more] = rolesOf(args.role ?? []);
  if (more.length) usageError('--list takes at most one --role');
  await runCli(async (config) => {
    const { db } = createDb(config.DATABASE_URL, 2);
    try {
      await migrateToLatest(db);
      console.log(JSON.stringify(await listAccounts(db, { limit, after, role }), null, 2));
    } finally {
      await db.destroy();
    }
  });
  process.exit(0);
}

/** A change of an account someone else registered, refused (foreignChangeRefusal): exits 2, nothing changed. */
function exitRefused(error: ForeignAccountError): never {
  console.error(
    `${error.message}. Nothing was changed. To change its roles or password anyway, run again with --change-existing: its sessions, grants and tokens will be ended.`,
  );
  process.exit(2);
}

const endedText = (e: { sessions: number; grants: number }) =>
  `ended ${e.sessions} session(s) and ${e.grants} grant(s); earlier tokens are refused`;

/** What the command did, in words (printed under "done" and on stderr). */
function changesDone(c: AccountChanges): string[] {
  const done: string[] = [];
  if (c.created) done.push(`created the account with roles ${c.account.roles.join(', ')}`);
  else if (c.rolesAdded.length) done.push(`added roles ${c.rolesAdded.join(', ')}`);
  if (c.passwordChanged) done.push(c.created ? 'set the password' : 'changed the password');
  if (c.ended)
    done.push(`ended ${c.ended.sessions} session(s) and ${c.ended.grants} grant(s); earlier tokens are refused`);
  return done;
}

await runCli(async (config) => {
  const { db } = createDb(config.DATABASE_URL, 2);
  try {
    await migrateToLatest(db);
    if (accountActions) {
      const account = await findAccountByEmail(db, email);
      if (!account) usageError(`no account has the email ${email}`);
      const id = (account as NonNullable<typeof account>).id;
      const done: string[] = [];
      let state: Record<string, unknown> = { disabled: Boolean(args.disable) };
      if (newRoles) {
        const refusal = foreignChangeRefusal(account as NonNullable<typeof account>, args['change-existing']);
        if (refusal) exitRefused(refusal);
        const set = await setAccountRoles(db, id, newRoles);
        state = { roles: set?.roles };
        done.push(
          set?.changed
            ? `set the roles to ${set.roles.join(', ')}; its sessions, grants and tokens are ended`
            : `the roles were already ${set?.roles.join(', ')}`,
        );
      } else if (args['end-sessions']) {
        done.push(endedText((await endAccountSessions(db, id)) ?? { sessions: 0, grants: 0 }));
      } else {
        await setAccountDisabled(db, id, Boolean(args.disable));
        done.push(
          args.disable ? 'disabled the account; its sessions, grants and tokens are ended' : 'enabled the account',
        );
      }
      for (const line of done) console.error(`account: ${line}`);
      console.log(JSON.stringify({ account: { id, email, ...state }, done }, null, 2));
      return;
    }
    let changes: AccountChanges;
    try {
      changes = await ensureAccountWithRoles(db, {
        email,
        roles: roles as Role[],
        changeForeign: Boolean(args['change-existing']),
        ...(args.password ? { password: args.password } : {}),
        ...(args['first-name'] ? { first_name: args['first-name'] } : {}),
        ...(args['last-name'] ? { last_name: args['last-name'] } : {}),
      });
    } catch (error) {
      if (error instanceof ForeignAccountError) exitRefused(error);
      throw error;
    }
    const { account, created } = changes;
    let clientId = args['client-id'];
    let client: { client_id: string; client_secret: string } | undefined;
    if (clientId) {
      if (!(await findClient(db, clientId))) usageError(`no live client "${clientId}"`);
    } else {
      const registered = await registerClient(db, {
        client_name: `cli:${account.email}`,
        redirect_uris: ['http://127.0.0.1/callback'],
        ownerAccountId: account.id,
        firstParty: true,
      });
      clientId = registered.client_id;
      client = { client_id: registered.client_id, client_secret: registered.client_secret };
    }
    const accessToken = await issueOperatorToken(db, config, {
      accountId: account.id,
      clientId: clientId as string,
      ttlSeconds: ttl,
      claims: { email: account.email },
    });
    const apiKey = await issueApiKey(db, clientId as string, 'npm run account');
    const done = changesDone(changes);
    for (const line of done) console.error(`account: ${line}`);
    const out = {
      account: {
        id: account.id,
        email: account.email,
        roles: account.roles,
        ldid: account.ldid,
        user_id: account.number,
        created,
      },
      done,
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
