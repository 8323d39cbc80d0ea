import test from 'ava';
import { MAX_WEB_HOOKS_PER_USER } from '../shared/tracking/webhooks/hooks.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { me, violations } from './helpers/tracking-activities.ts';

// /v2/user_web_hooks as a resource: Hydra, the owner only, the secret shown once, the 422s.
// Deliveries are test/webhooks-delivery.test.ts's.

const api = await startTrackingApi();
test.after.always(() => api.close());

const HOOK_URL = 'https://hooks.example.com/sports';
const create = (u: TrackingTestUser, body: Record<string, unknown>) => api.call('POST', '/user_web_hooks', u, { body });

test('a hook is created with its secret shown once, read, listed, changed and deleted by its owner (Hydra)', async (t) => {
  const u = await api.user();
  const made = await create(u, { user: me(u), url: HOOK_URL, events: ['activity_delete', 'activity_create'] });
  t.is(made.status, 201, JSON.stringify(made.body));
  const hook = made.body;
  t.is(hook['@context'], '/v2/contexts/UserWebHook');
  t.is(hook['@type'], 'UserWebHook');
  t.is(hook['@id'], `/v2/user_web_hooks/${hook.id}`);
  t.is(made.headers.get('location'), `${api.config.PUBLIC_URL}/v2/user_web_hooks/${hook.id}`);
  t.like(hook, {
    user: me(u),
    url: HOOK_URL,
    events: ['activity_create', 'activity_delete'],
    startFailureDate: null,
    consecutiveFailures: 0,
    disabledAt: null,
    disabledReason: null,
  });
  t.regex(hook.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);

  const read = await api.call('GET', `/user_web_hooks/${hook.id}`, u);
  t.is(read.status, 200);
  t.false('secret' in read.body, 'the secret is shown at creation only');
  const list = await api.call('GET', '/user_web_hooks', u);
  t.is(list.status, 200);
  t.is(list.body['hydra:totalItems'], 1);
  t.deepEqual(
    list.body['hydra:member'].map((h: { id: string }) => h.id),
    [hook.id],
  );
  t.is((await api.call('GET', `/user_web_hooks?user=${me(u)}`, u)).body['hydra:totalItems'], 1);
  t.is((await api.call('GET', '/user_web_hooks?user=/v2/users/someone-else', u)).body['hydra:totalItems'], 0);
  const plain = await api.call('GET', '/user_web_hooks', u, { headers: { accept: 'application/json' } });
  t.true(Array.isArray(plain.body));

  // PUT: the fields sent replace theirs, read-only ones are ignored.
  const changed = await api.call('PUT', `/user_web_hooks/${hook.id}`, u, {
    body: { events: ['activity_update', 'export_ready'], consecutiveFailures: 7, id: 'ignored' },
  });
  t.is(changed.status, 200, JSON.stringify(changed.body));
  t.like(changed.body, {
    id: hook.id,
    url: HOOK_URL,
    events: ['activity_update', 'export_ready'],
    consecutiveFailures: 0,
  });

  t.is((await api.call('DELETE', `/user_web_hooks/${hook.id}`, u)).status, 204);
  t.is((await api.call('GET', `/user_web_hooks/${hook.id}`, u)).status, 404);
});

test('events default to the v2.26 ones; rotate_secret answers a new secret, the previous one kept to sign for a while', async (t) => {
  const u = await api.user();
  const hook = (await create(u, { user: me(u), url: HOOK_URL })).body;
  t.deepEqual(hook.events, ['activity_create', 'activity_delete']);
  const rotated = await api.call('POST', `/user_web_hooks/${hook.id}/rotate_secret`, u);
  t.is(rotated.status, 200, JSON.stringify(rotated.body));
  t.is(rotated.body['@id'], `/v2/user_web_hooks/${hook.id}`);
  t.regex(rotated.body.secret, /^whsec_/);
  t.not(rotated.body.secret, hook.secret);
  const row = await api.database.db
    .selectFrom('user_web_hooks')
    .select(['secret', 'previous_secret', 'previous_secret_until'])
    .where('id', '=', hook.id)
    .executeTakeFirstOrThrow();
  t.is(row.secret, rotated.body.secret);
  t.is(row.previous_secret, hook.secret);
  t.true((row.previous_secret_until?.getTime() ?? 0) > Date.now());
});

test('the attempts of a hook are a Hydra collection, empty before any delivery', async (t) => {
  const u = await api.user();
  const hook = (await create(u, { user: me(u), url: HOOK_URL })).body;
  const attempts = await api.call('GET', `/user_web_hooks/${hook.id}/attempts`, u);
  t.is(attempts.status, 200);
  t.like(attempts.body, {
    '@id': `/v2/user_web_hooks/${hook.id}/attempts`,
    '@type': 'hydra:Collection',
    'hydra:member': [],
    'hydra:totalItems': 0,
  });
});

test('another user reads, changes, rotates and deletes nothing of a hook: 404 every time', async (t) => {
  const owner = await api.user();
  const other = await api.user();
  const hook = (await create(owner, { user: me(owner), url: HOOK_URL })).body;
  for (const [method, path] of [
    ['GET', `/user_web_hooks/${hook.id}`],
    ['PUT', `/user_web_hooks/${hook.id}`],
    ['DELETE', `/user_web_hooks/${hook.id}`],
    ['POST', `/user_web_hooks/${hook.id}/rotate_secret`],
    ['GET', `/user_web_hooks/${hook.id}/attempts`],
  ] as const) {
    const res = await api.call(method, path, other, method === 'PUT' ? { body: { url: HOOK_URL } } : {});
    t.is(res.status, 404, `${method} ${path}`);
    t.is(res.body['@type'], 'hydra:Error');
  }
  t.is((await api.call('GET', '/user_web_hooks', other)).body['hydra:totalItems'], 0);
  t.is((await api.call('GET', `/user_web_hooks/${hook.id}`, null)).status, 401);
  const still = await api.call('GET', `/user_web_hooks/${hook.id}`, owner);
  t.is(still.status, 200);
  t.is(still.body.url, HOOK_URL);
});

test('bad input is a 422 ConstraintViolationList naming each field', async (t) => {
  const u = await api.user();
  const other = await api.user();
  const refused = async (body: Record<string, unknown>) => {
    const res = await create(u, body);
    t.is(res.status, 422, JSON.stringify(body));
    t.is(res.body['@type'], 'ConstraintViolationList');
    return { paths: violations(res.body), messages: res.body.violations.map((v: { message: string }) => v.message) };
  };
  t.deepEqual((await refused({ user: me(u), url: 'ftp://example.com/x' })).paths, ['url']);
  t.deepEqual((await refused({ user: me(u), url: 'not a url' })).paths, ['url']);
  const http = await refused({ user: me(u), url: 'http://example.com/hook' });
  t.regex(http.messages[0], /https/);
  t.regex((await refused({ user: me(u), url: 'https://127.0.0.1/hook' })).messages[0], /loopback/);
  t.regex((await refused({ user: me(u), url: 'https://[::ffff:10.0.0.1]/hook' })).messages[0], /private/);
  t.regex((await refused({ user: me(u), url: 'https://169.254.169.254/latest' })).messages[0], /link-local/);
  t.deepEqual((await refused({ user: me(u), url: 'https://a:b@example.com/x' })).paths, ['url']);
  t.deepEqual((await refused({ user: me(u), url: HOOK_URL, events: ['activity_create', 'activity_explode'] })).paths, [
    'events[1]',
  ]);
  t.deepEqual((await refused({ user: me(u), url: HOOK_URL, events: [] })).paths, ['events']);
  t.deepEqual((await refused({ user: me(other), url: HOOK_URL })).paths, ['user']);
  t.deepEqual((await refused({ user: 'not an iri', url: HOOK_URL })).paths, ['user']);
  t.deepEqual((await refused({ url: HOOK_URL })).paths, ['user']);
  t.deepEqual((await refused({ user: me(u), url: HOOK_URL, color: 'red' })).paths, ['color']);
  const hook = (await create(u, { user: me(u), url: HOOK_URL })).body;
  const put = await api.call('PUT', `/user_web_hooks/${hook.id}`, u, { body: { url: 'gopher://x', events: ['nope'] } });
  t.is(put.status, 422);
  t.deepEqual(violations(put.body), ['url', 'events[0]']);
  t.is((await api.call('GET', '/user_web_hooks', u)).body['hydra:totalItems'], 1, 'nothing was stored by the 422s');
});

test(`a user holds at most ${MAX_WEB_HOOKS_PER_USER} hooks (409)`, async (t) => {
  const u = await api.user();
  for (let i = 0; i < MAX_WEB_HOOKS_PER_USER; i++)
    t.is((await create(u, { user: me(u), url: `${HOOK_URL}/${i}` })).status, 201);
  const over = await create(u, { user: me(u), url: HOOK_URL });
  t.is(over.status, 409);
  t.regex(over.body['hydra:description'], /most allowed/);
});
