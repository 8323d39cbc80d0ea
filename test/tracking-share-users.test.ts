import test from 'ava';
import { runAccountDeletion, startAccountDeletion } from '../shared/services/account-deletion.ts';
import { MAX_SHARES_ACCEPTED, MAX_SHARES_GIVEN } from '../shared/tracking/sharing/share-users.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, ids, me, violations } from './helpers/tracking-activities.ts';

// /v2/share_users end to end (docs/tracking-sharing-users.md): the request, the friend's answer,
// deletion by either side, the refusals of bad input, the limit, the events, the lists by
// direction and the change feed; the visibility defaults; the feed and the public list by cursor.
// Who sees what of each read is test/tracking-sharing-matrix.test.ts.

const api = await startTrackingApi();
test.after.always(() => api.close());
const { db } = api.database;

/** A user the tracking API knows (their first call creates them). */
async function athlete(): Promise<TrackingTestUser> {
  const u = await api.user();
  const res = await api.call('GET', '/me', u);
  if (res.status !== 200) throw new Error(`GET /me: ${res.status}`);
  return u;
}

/** `count` tracking users made in the database (that many accounts through the API would be slow): their ids. */
async function usersInDatabase(count: number, prefix: string): Promise<string[]> {
  const accounts = await db
    .insertInto('accounts')
    .values(Array.from({ length: count }, (_, i) => ({ email: `${prefix}-${i}@example.com`, password_hash: null })))
    .returning(['id', 'ldid'])
    .execute();
  await db
    .insertInto('tracking_users')
    .values(accounts.map((a) => ({ id: a.ldid, account_id: a.id })))
    .execute();
  return accounts.map((a) => a.ldid);
}

async function share(owner: TrackingTestUser, friend: TrackingTestUser) {
  const res = await api.call('POST', '/share_users', owner, { body: { user: me(friend) } });
  if (res.status !== 201) throw new Error(`POST /share_users: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; status: string };
}

const answer = (u: TrackingTestUser, id: string, status: string) =>
  api.call('PUT', `/share_users/${id}`, u, { body: { status } });

async function hookFor(u: TrackingTestUser) {
  const res = await api.call('POST', '/user_web_hooks', u, {
    body: {
      user: me(u),
      url: 'https://hooks.example.com/sharing',
      events: ['share_request', 'share_user_create', 'share_user_delete'],
    },
  });
  if (res.status !== 201) throw new Error(`POST /user_web_hooks: ${res.status} ${JSON.stringify(res.body)}`);
}

const eventsOf = async (u: TrackingTestUser) =>
  (
    await db
      .selectFrom('webhook_events')
      .select(['type', 'resource', 'data'])
      .where('user_id', '=', u.ldid)
      .orderBy('seq')
      .execute()
  ).map((e) => `${e.type} ${e.resource}`);

test('a share goes pending → accepted → deleted, each step answered as documented, with its events to the users concerned', async (t) => {
  const [owner, friend] = [await athlete(), await athlete()];
  await hookFor(owner);
  await hookFor(friend);
  const created = await api.call('POST', '/share_users', owner, { body: { user: me(friend) } });
  t.is(created.status, 201);
  const id = created.body.id as string;
  t.is(created.headers.get('location'), `${api.config.PUBLIC_URL}/v2/share_users/${id}`);
  t.like(created.body, {
    '@id': `/v2/share_users/${id}`,
    '@type': 'ShareUser',
    user: me(friend),
    owner: me(owner),
    status: 'pending',
  });

  // Both sides read it; the owner cannot answer it.
  for (const u of [owner, friend]) t.is((await api.call('GET', `/share_users/${id}`, u)).status, 200);
  const byOwner = await answer(owner, id, 'accepted');
  t.is(byOwner.status, 403);
  t.is(byOwner.body['@type'], 'hydra:Error');

  const accepted = await answer(friend, id, 'accepted');
  t.is(accepted.status, 200);
  t.is(accepted.body.status, 'accepted');
  t.true(accepted.body.updatedAt >= created.body.updatedAt);

  // The lists by direction: given for the owner, received for the friend.
  t.deepEqual(ids((await api.call('GET', '/share_users', owner)).body), [id]);
  t.deepEqual(ids((await api.call('GET', '/share_users', friend)).body), []);
  t.deepEqual(ids((await api.call('GET', '/share_users?direction=received&status=accepted', friend)).body), [id]);
  t.deepEqual(ids((await api.call('GET', '/share_users?direction=received&status=pending', friend)).body), []);
  t.deepEqual(ids((await api.call('GET', `/share_users?user=${me(friend)}`, owner)).body), [id]);
  const later = encodeURIComponent(new Date(Date.parse(accepted.body.updatedAt) + 1000).toISOString());
  t.deepEqual(ids((await api.call('GET', `/share_users?updatedAt[after]=${later}`, owner)).body), []);

  // The friend deletes it (either side may).
  t.is((await api.call('DELETE', `/share_users/${id}`, friend)).status, 204);
  t.is((await api.call('GET', `/share_users/${id}`, owner)).status, 404);

  const resource = `/v2/share_users/${id}`;
  t.deepEqual(await eventsOf(friend), [
    `share_request ${resource}`,
    `share_user_create ${resource}`,
    `share_user_delete ${resource}`,
  ]);
  t.deepEqual(await eventsOf(owner), [`share_user_create ${resource}`, `share_user_delete ${resource}`]);
});

test('a stranger neither reads, answers nor deletes a share: 404', async (t) => {
  const [owner, friend, stranger] = [await athlete(), await athlete(), await athlete()];
  const { id } = await share(owner, friend);
  t.is((await api.call('GET', `/share_users/${id}`, stranger)).status, 404);
  t.is((await answer(stranger, id, 'accepted')).status, 404);
  t.is((await api.call('DELETE', `/share_users/${id}`, stranger)).status, 404);
  t.is((await api.call('GET', `/share_users/${id}`, owner)).body.status, 'pending');
});

test('bad input: oneself, an unknown user, a user being deleted, twice (409 naming the share), a bad status or member', async (t) => {
  const [owner, friend] = [await athlete(), await athlete()];
  const post = (body: unknown) => api.call('POST', '/share_users', owner, { body });

  const self = await post({ user: me(owner) });
  t.is(self.status, 422);
  t.deepEqual(violations(self.body), ['user']);
  const unknown = await post({ user: '/v2/users/nobody-at-all' });
  t.is(unknown.status, 422);
  t.deepEqual(violations(unknown.body), ['user']);
  t.is((await post({ user: '/v2/sports/121' })).status, 422);
  t.is((await post({})).status, 422);
  t.is((await post({ user: me(friend), status: 'accepted', extra: 1 })).status, 422);

  const leaving = await athlete();
  await db.insertInto('account_deletions').values({ account_id: leaving.id, requested_by: 'operator' }).execute();
  t.is((await post({ user: me(leaving) })).status, 422);

  const first = await share(owner, friend);
  const twice = await post({ user: me(friend) });
  t.is(twice.status, 409);
  t.regex(twice.body['hydra:description'], new RegExp(`/v2/share_users/${first.id}`));

  // Sent back whole, a ShareUser is fine; a status that is no answer is not.
  t.is((await answer(friend, first.id, 'pending')).status, 422);
  t.is((await answer(friend, first.id, 'maybe')).status, 422);
  const sentBack = await api.call('PUT', `/share_users/${first.id}`, friend, {
    body: { ...(await api.call('GET', `/share_users/${first.id}`, friend)).body, status: 'refused' },
  });
  t.is(sentBack.status, 200);
  t.is(sentBack.body.status, 'refused');
  t.is((await api.call('GET', '/share_users?direction=sideways', owner)).status, 422);
  t.is((await api.call('GET', '/share_users?status=maybe', owner)).status, 422);
});

test(`a user shares with at most ${MAX_SHARES_GIVEN} users: 409 beyond`, async (t) => {
  const [owner, last] = [await athlete(), await athlete()];
  const others = await usersInDatabase(MAX_SHARES_GIVEN, `limit-${owner.ldid}`);
  await db
    .insertInto('share_users')
    .values(others.map((friend_id) => ({ user_id: owner.ldid, friend_id })))
    .execute();
  const refused = await api.call('POST', '/share_users', owner, { body: { user: me(last) } });
  t.is(refused.status, 409);
  t.regex(refused.body['hydra:description'], new RegExp(`${MAX_SHARES_GIVEN} users`));
  await db
    .deleteFrom('share_users')
    .where('friend_id', '=', others[0] as string)
    .execute();
  t.is((await api.call('POST', '/share_users', owner, { body: { user: me(last) } })).status, 201);
});

test("new activities take the user's default visibility; a create or a PUT sets their own; bad values are 422", async (t) => {
  const u = await athlete();
  const post = (fields: Record<string, unknown>) => api.call('POST', '/activities', u, { body: activity(u, fields) });
  const first = await post({ startdate: '2024-06-01T08:00:00Z' });
  t.like(first.body, { visibility: 'private', mapVisibility: 'private', mapHiddenEnds: 0 });

  const put = await api.call('PUT', `/users/${u.ldid}`, u, {
    body: { defaultVisibility: 'followers', defaultMapVisibility: 'followers', defaultMapHiddenEnds: 500 },
  });
  t.is(put.status, 200);
  t.like(put.body, { defaultVisibility: 'followers', defaultMapVisibility: 'followers', defaultMapHiddenEnds: 500 });
  const second = await post({ startdate: '2024-06-02T08:00:00Z' });
  t.like(second.body, { visibility: 'followers', mapVisibility: 'followers', mapHiddenEnds: 500 });
  const third = await post({ startdate: '2024-06-03T08:00:00Z', visibility: 'public', mapHiddenEnds: 0 });
  t.like(third.body, { visibility: 'public', mapVisibility: 'followers', mapHiddenEnds: 0 });

  const changed = await api.call('PUT', `/activities/${first.body.id}`, u, { body: { visibility: 'public' } });
  t.is(changed.status, 200);
  t.is(changed.body.visibility, 'public');

  for (const body of [
    { visibility: 'friends' },
    { mapVisibility: null },
    { mapHiddenEnds: -1 },
    { mapHiddenEnds: 10_001 },
  ]) {
    const bad = await api.call('PUT', `/activities/${first.body.id}`, u, { body });
    t.is(bad.status, 422, JSON.stringify(body));
  }
  t.is((await post({ startdate: '2024-06-04T08:00:00Z', visibility: 'everyone' })).status, 422);
  t.is((await api.call('PUT', `/users/${u.ldid}`, u, { body: { defaultVisibility: null } })).status, 422);
  t.is((await api.call('PUT', `/users/${u.ldid}`, u, { body: { defaultMapHiddenEnds: 1.5 } })).status, 422);
});

test('the feed and the public list page newest first by cursor; a cursor that is not one is a 422', async (t) => {
  const [reader, a, b] = [await athlete(), await athlete(), await athlete()];
  for (const owner of [a, b]) await answer(reader, (await share(owner, reader)).id, 'accepted');
  const made: { id: string; startdate: string }[] = [];
  for (let day = 1; day <= 5; day++)
    for (const [owner, visibility] of [
      [a, 'followers'],
      [b, day === 3 ? 'private' : 'public'],
    ] as const) {
      const startdate = `2031-0${day}-0${day}T0${day}:00:00Z`;
      const res = await api.call('POST', '/activities', owner, { body: activity(owner, { startdate, visibility }) });
      t.is(res.status, 201);
      if (visibility !== 'private') made.push({ id: res.body.id, startdate: res.body.startdate });
    }
  const newestFirst = made
    .sort((x, y) => (x.startdate === y.startdate ? (x.id < y.id ? 1 : -1) : x.startdate < y.startdate ? 1 : -1))
    .map((m) => m.id);

  const seen: string[] = [];
  let next: string | undefined = '/feed?limit=4';
  while (next) {
    const res = await api.call('GET', next.replace(/^\/v2/, ''), reader);
    t.is(res.status, 200);
    seen.push(...ids(res.body));
    next = res.body['hydra:view']['hydra:next'];
    t.is(res.body['hydra:view']['hydra:first'], '/v2/feed?limit=4');
    t.false(JSON.stringify(res.body['hydra:search'] ?? {}).includes('cursor'));
  }
  t.deepEqual(seen, newestFirst);

  // The public list holds b's public activities among everyone's: in the same order.
  const publicIds = new Set(made.filter((m) => newestFirst.includes(m.id)).map((m) => m.id));
  const pub = await api.call('GET', '/public_activities?limit=100', a);
  const mine = ids(pub.body).filter((id) => publicIds.has(id));
  t.is(mine.length, 4);
  t.deepEqual(
    mine,
    newestFirst.filter((id) => mine.includes(id)),
  );

  t.is((await api.call('GET', '/feed?cursor=bm90LWEtY3Vyc29y', reader)).status, 422);
  t.is((await api.call('GET', '/feed?limit=0', reader)).status, 422);
  // The caller's own activities are not in their feed.
  t.deepEqual(ids((await api.call('GET', '/feed', a)).body), []);
});

test("an account's deletion removes its shares, given and received, counted by its own step", async (t) => {
  const [owner, friend, other] = [await athlete(), await athlete(), await athlete()];
  await answer(friend, (await share(owner, friend)).id, 'accepted');
  await share(other, owner);
  t.true(await startAccountDeletion(db, owner.id));
  const outcome = await runAccountDeletion(db, owner.id, { storageDir: api.config.STORAGE_DIR });
  t.is(JSON.stringify(outcome).includes('user-shares'), true);
  const left = await db
    .selectFrom('share_users')
    .select('id')
    .where((eb) => eb.or([eb('user_id', '=', owner.ldid), eb('friend_id', '=', owner.ldid)]))
    .execute();
  t.deepEqual(left, []);
  t.deepEqual(ids((await api.call('GET', '/share_users?direction=received', friend)).body), []);
  t.deepEqual(ids((await api.call('GET', '/share_users', other)).body), []);
});

test("a friend's route answers only that friend's activities: another user's id is a 404, public or not", async (t) => {
  const [owner, friend, other] = [await athlete(), await athlete(), await athlete()];
  await answer(friend, (await share(owner, friend)).id, 'accepted');
  const theirs = await api.call('POST', '/activities', other, {
    body: activity(other, { startdate: '2031-07-01T08:00:00Z', visibility: 'public' }),
  });
  t.is(theirs.status, 201);
  t.is((await api.call('GET', `/friends/${owner.ldid}/activities/${theirs.body.id}`, friend)).status, 404);
  t.is((await api.call('GET', `/friends/${owner.ldid}/activities/not-an-id!`, friend)).status, 404);
  t.is((await api.call('GET', `/public_activities/${theirs.body.id}`, friend)).status, 200);
});

test(`a user accepts at most ${MAX_SHARES_ACCEPTED} shares at once: 409 beyond`, async (t) => {
  const [reader, last] = [await athlete(), await athlete()];
  const sharing = await usersInDatabase(MAX_SHARES_ACCEPTED, `followed-${reader.ldid}`);
  await db
    .insertInto('share_users')
    .values(sharing.map((id) => ({ user_id: id, friend_id: reader.ldid, status: 'accepted' as const })))
    .execute();
  const { id } = await share(last, reader);
  const refused = await answer(reader, id, 'accepted');
  t.is(refused.status, 409);
  t.regex(refused.body['hydra:description'], new RegExp(`${MAX_SHARES_ACCEPTED} users`));
  t.is((await answer(reader, id, 'refused')).status, 200, 'refusing is always possible');
  await db
    .deleteFrom('share_users')
    .where('user_id', '=', sharing[0] as string)
    .execute();
  t.is((await answer(reader, id, 'accepted')).status, 200);
});
