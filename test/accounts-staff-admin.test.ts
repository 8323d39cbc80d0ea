import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import test from 'ava';
import { accountsService } from '../api/accounts/index.ts';
import { findApiKey, issueApiKey } from '../shared/accounts/api-keys.ts';
import { registerClient } from '../shared/accounts/clients.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { guardedTestService } from './helpers/tokens.ts';

// Staff administration of accounts over HTTP and from `npm run account`: list, set roles,
// disable (and what a disabled account's credentials still open: nothing).
const run = promisify(execFile);
let api: TestApi;
test.before(async () => {
  api = await startTestApi(null, { services: [accountsService, guardedTestService()] });
});
test.after.always(() => api?.close());

const asStaff = async () => `Bearer ${(await api.account(['staff'])).token}`;
const call = (path: string, authorization?: string, init: { method?: string; body?: unknown } = {}) =>
  api.fetch(`/api/v1/accounts${path}`, {
    method: init.method ?? 'GET',
    headers: {
      ...(authorization ? { authorization } : {}),
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });

interface Listing {
  accounts: { id: string; number: number; email: string; roles: string[]; disabled: boolean }[];
  next?: number;
}

test('staff list accounts in keyset pages, by role or email; others are refused before their input is read', async (t) => {
  const staff = await asStaff();
  const partners = [await api.account(['partner']), await api.account(['partner']), await api.account(['partner'])];
  const seen: string[] = [];
  let after: number | undefined;
  for (let page = 0; page < 20; page++) {
    const res = await call(`?limit=2&role=partner${after === undefined ? '' : `&after=${after}`}`, staff);
    t.is(res.status, 200);
    const body = (await res.json()) as Listing;
    t.true(body.accounts.length <= 2);
    t.true(body.accounts.every((a) => a.roles.includes('partner')));
    seen.push(...body.accounts.map((a) => a.id));
    if (body.next === undefined) break;
    after = body.next;
  }
  t.deepEqual(
    seen.filter((id) => partners.some((p) => p.id === id)),
    partners.map((p) => p.id),
    'every partner once, in creation order',
  );
  const one = (await (await call(`?email=${encodeURIComponent(partners[1]?.email ?? '')}`, staff)).json()) as Listing;
  t.deepEqual(
    one.accounts.map((a) => a.id),
    [partners[1]?.id],
  );

  const ordinary = `Bearer ${(await api.account()).token}`;
  t.is((await call('?limit=0', ordinary)).status, 403, 'not staff: 403 before the query is validated');
  t.is((await call('')).status, 401);
  const bad = await call('?limit=500&role=admin', staff);
  t.is(bad.status, 422);
  const problem = (await bad.json()) as { errors: { path: string }[] };
  t.deepEqual(problem.errors.map((e) => e.path).sort(), ['query.limit', 'query.role']);
});

test("staff set an account's roles: removed ones are gone, earlier tokens end, unknown roles and accounts are refused", async (t) => {
  const staff = await asStaff();
  const target = await api.account(['partner']);
  const me = (token: string) => api.fetch('/test/me', { headers: { authorization: `Bearer ${token}` } });
  t.is((await me(target.token)).status, 200);

  const set = await call(`/${target.id}/roles`, staff, { method: 'PUT', body: { roles: ['staff'] } });
  t.is(set.status, 200);
  t.deepEqual(await set.json(), { roles: ['staff', 'user'], changed: true });
  const row = await api.database.db
    .selectFrom('accounts')
    .select('roles')
    .where('id', '=', target.id)
    .executeTakeFirstOrThrow();
  t.deepEqual([...row.roles].sort(), ['staff', 'user'], 'partner removed, user kept');
  t.is((await me(target.token)).status, 401, 'a token issued before the change is refused');

  const again = await call(`/${target.id}/roles`, staff, { method: 'PUT', body: { roles: ['user', 'staff'] } });
  t.deepEqual(await again.json(), { roles: ['staff', 'user'], changed: false });
  t.is((await call(`/${target.id}/roles`, staff, { method: 'PUT', body: { roles: ['root'] } })).status, 422);
  t.is((await call(`/${target.id}/roles`, staff, { method: 'PUT', body: {} })).status, 422);
  const unknown = '00000000-0000-4000-8000-000000000000';
  t.is((await call(`/${unknown}/roles`, staff, { method: 'PUT', body: { roles: [] } })).status, 404);
});

test("a disabled account's tokens and the API keys of the clients it owns are refused at once", async (t) => {
  const staff = await asStaff();
  const owner = await api.account();
  const client = await registerClient(api.database.db, {
    client_name: 'owned',
    redirect_uris: ['https://owned.test/cb'],
    ownerAccountId: owner.id,
  });
  const key = await issueApiKey(api.database.db, client.client_id, 'owned');
  t.truthy(await findApiKey(api.database.db, key.api_key));
  t.is((await call(`/${owner.id}/disable`, staff, { method: 'POST' })).status, 204);
  t.is(await findApiKey(api.database.db, key.api_key), undefined, "the owner's client's key is refused");
  t.is((await api.fetch('/test/me', { headers: { authorization: `Bearer ${owner.token}` } })).status, 401);
  t.is((await call(`/${owner.id}/enable`, staff, { method: 'POST' })).status, 204);
  t.truthy(await findApiKey(api.database.db, key.api_key), 'enabled again: the key works again');
});

test('npm run account -- --list and --set-roles do the same from the command line', async (t) => {
  const target = await api.account(['partner']);
  const env = { ...process.env, DATABASE_URL: api.database.url, LOG_LEVEL: 'silent' };
  const cli = async (args: string[]) =>
    JSON.parse((await run(process.execPath, ['scripts/account.ts', ...args], { env })).stdout);
  const listed = (await cli(['--list', '--role', 'partner', '--limit', '200'])) as Listing;
  t.true(listed.accounts.some((a) => a.id === target.id));
  // The target registered itself (not an operator's account): the change must be asked for.
  const set = (await cli(['--email', target.email, '--set-roles', 'staff', '--change-existing'])) as {
    account: { roles: string[] };
    done: string[];
  };
  t.deepEqual(set.account.roles, ['staff', 'user']);
  t.regex(set.done.join(), /set the roles to staff, user/);
  const after = (await cli(['--list', '--role', 'partner', '--limit', '200'])) as Listing;
  t.false(after.accounts.some((a) => a.id === target.id));
  const refused = await run(process.execPath, ['scripts/account.ts', '--email', target.email, '--set-roles', 'root'], {
    env,
  }).catch((e: { code: number; stderr: string }) => e);
  t.is((refused as { code: number }).code, 2);
});
