import test from 'ava';
import { rebuildUserSumups } from '../shared/tracking/sumups/rollup.ts';
import { mintToken } from './helpers/tokens.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, ids, me } from './helpers/tracking-activities.ts';

// Who sees what (docs/tracking-sharing-users.md, "Who sees what"): one owner with a private, a
// followers and a public activity, and every kind of caller — the owner, a friend whose share is
// accepted, pending or refused, a stranger, staff, an application without the tracking scopes —
// against every read of an activity and every write. Each cell is one request's status (and,
// where it matters, what the answer holds); a revoked share closes at once.

const api = await startTrackingApi();
test.after.always(() => api.close());
const { db } = api.database;

async function athlete(roles?: ('user' | 'staff')[]): Promise<TrackingTestUser> {
  const u = await api.user(roles);
  if ((await api.call('GET', '/me', u)).status !== 200) throw new Error('GET /me');
  return u;
}

/** A track of `points` one-second points heading north, about 11 m apart. */
function track(points: number) {
  const datastream: Record<string, Record<string, number>> = {};
  const locations: Record<string, { latitude: number; longitude: number; elevation: number }> = {};
  for (let s = 0; s < points; s++) {
    datastream[String(s)] = { '1': 120 + (s % 20), '5': s * 11.1 };
    locations[String(s)] = { latitude: 50.6 + s * 1e-4, longitude: 3.05, elevation: 20 + s };
  }
  return { datastream, locations, duration: points - 1 };
}

/** The owner's activities, the shares and the callers, made once before the tests. */
async function setUp() {
  const owner = await athlete();
  const accepted = await athlete();
  const pending = await athlete();
  const refused = await athlete();
  const stranger = await athlete();
  const staff = await athlete(['user', 'staff']);

  async function created(fields: Record<string, unknown>) {
    const res = await api.call('POST', '/activities', owner, { body: activity(owner, { ...track(100), ...fields }) });
    if (res.status !== 201) throw new Error(`POST /activities: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id as string;
  }
  const privateRun = await created({ startdate: '2024-05-01T08:00:00Z', visibility: 'private' });
  // Followers see it and its map, without 200 m at each end (about 18 points of 11 m).
  const followersRun = await created({
    startdate: '2024-05-02T08:00:00Z',
    visibility: 'followers',
    mapVisibility: 'followers',
    mapHiddenEnds: 200,
  });
  // Everyone sees it, nobody but the owner its map.
  const publicRun = await created({
    startdate: '2024-05-03T08:00:00Z',
    visibility: 'public',
    mapVisibility: 'private',
  });
  await rebuildUserSumups(db, owner.ldid);

  async function shareWith(friend: TrackingTestUser, status?: 'accepted' | 'refused') {
    const res = await api.call('POST', '/share_users', owner, { body: { user: me(friend) } });
    if (res.status !== 201) throw new Error(`POST /share_users: ${res.status}`);
    if (status) await api.call('PUT', `/share_users/${res.body.id}`, friend, { body: { status } });
    return res.body.id as string;
  }
  const shares = {
    accepted: await shareWith(accepted, 'accepted'),
    pending: await shareWith(pending),
    refused: await shareWith(refused, 'refused'),
  };

  /** An application granted everything but the tracking scopes, for the owner. */
  const noScope: TrackingTestUser = {
    ...owner,
    token: await mintToken(db, api.config, owner, { scopes: ['places:read', 'places:write'] }),
  };
  return {
    owner,
    accepted,
    pending,
    refused,
    stranger,
    staff,
    noScope,
    privateRun,
    followersRun,
    publicRun,
    shares,
    created,
    shareWith,
  };
}
let world: Awaited<ReturnType<typeof setUp>>;
test.before(async () => {
  world = await setUp();
});

type Role = 'owner' | 'accepted' | 'pending' | 'refused' | 'stranger' | 'staff' | 'noScope';
const ROLES: Role[] = ['owner', 'accepted', 'pending', 'refused', 'stranger', 'staff', 'noScope'];
const everyoneBut = (status: number, except: Partial<Record<Role, number>>) =>
  Object.fromEntries(ROLES.map((r) => [r, except[r] ?? status])) as Record<Role, number>;

/** A path with `{private}`, `{followers}`, `{public}` (the runs), `{owner}` and `{share:<status>}` filled in. */
function resolved(template: string): string {
  return template
    .replace('{private}', world.privateRun)
    .replace('{followers}', world.followersRun)
    .replace('{public}', world.publicRun)
    .replace('{owner}', world.owner.ldid)
    .replace(/\{share:(\w+)\}/, (_, status: keyof typeof world.shares) => world.shares[status]);
}
const friendPath = (id?: string) => `/friends/${world.owner.ldid}/activities${id ? `/${id}` : ''}`;

/** Each read and write, with the status each caller gets. */
const MATRIX: [string, string, Record<Role, number>][] = [
  // The owner's own routes: the owner alone, whatever the visibility.
  ...['{private}', '{followers}', '{public}'].flatMap((id): [string, string, Record<Role, number>][] => [
    ['GET', `/activities/${id}`, everyoneBut(404, { owner: 200, noScope: 403 })],
    ['GET', `/activities/${id}.gpx`, everyoneBut(404, { owner: 200, noScope: 403 })],
    ['GET', `/activities/${id}/streams?resolution=low`, everyoneBut(404, { owner: 200, noScope: 403 })],
    ['GET', `/activities/${id}/laps`, everyoneBut(404, { owner: 200, noScope: 403 })],
    ['GET', `/activities/${id}/splits`, everyoneBut(404, { owner: 200, noScope: 403 })],
    ['GET', `/activities/${id}/best_efforts`, everyoneBut(404, { owner: 200, noScope: 403 })],
    ['GET', `/activities/${id}/similar/5`, everyoneBut(404, { owner: 200, noScope: 403 })],
    ['PUT', `/activities/${id}`, everyoneBut(404, { owner: 200, noScope: 403 })],
  ]),
  // A friend's routes: an accepted friend, for what followers see.
  ['GET', '/friends/{owner}/activities', everyoneBut(404, { accepted: 200, noScope: 403 })],
  ['GET', '/friends/{owner}/activities/{private}', everyoneBut(404, { noScope: 403 })],
  ['GET', '/friends/{owner}/activities/{followers}', everyoneBut(404, { accepted: 200, noScope: 403 })],
  ['GET', '/friends/{owner}/activities/{public}', everyoneBut(404, { accepted: 200, noScope: 403 })],
  // Public activities: anyone signed in with the scope, the owner too.
  ['GET', '/public_activities/{private}', everyoneBut(404, { noScope: 403 })],
  ['GET', '/public_activities/{followers}', everyoneBut(404, { noScope: 403 })],
  ['GET', '/public_activities/{public}', everyoneBut(200, { noScope: 403 })],
  // Statistics: the owner's own; a friend's through the share they accepted.
  ['GET', '/share_users_stats/{share:accepted}', everyoneBut(404, { accepted: 200, noScope: 403 })],
  ['GET', '/share_users_stats/{share:pending}', everyoneBut(404, { noScope: 403 })],
  ['GET', '/share_users_stats/{share:refused}', everyoneBut(404, { noScope: 403 })],
  ['GET', '/users/{owner}/stats', everyoneBut(404, { owner: 200, noScope: 403 })],
  ['GET', '/user_records', everyoneBut(200, { noScope: 403 })],
];

for (const [method, template, expected] of MATRIX)
  test(`${method} ${template}: ${JSON.stringify(expected)}`, async (t) => {
    const path = resolved(template);
    const body = method === 'PUT' ? { name: 'renamed' } : undefined;
    for (const role of ROLES) {
      const res = await api.call(method, path, world[role], body ? { body } : {});
      t.is(res.status, expected[role], `${role}: ${JSON.stringify(res.body).slice(0, 300)}`);
      if (res.status >= 400 && res.headers.get('content-type')?.includes('json'))
        t.is(res.body['@type'], 'hydra:Error', role);
    }
  });

// These change what the others read: one after the other, before the matrix (ava runs serial tests first).
test.serial('a friend never writes: PUT and DELETE of the owner’s activities are 404 on every route', async (t) => {
  for (const id of [world.privateRun, world.followersRun, world.publicRun]) {
    t.is((await api.call('DELETE', `/activities/${id}`, world.accepted)).status, 404);
    t.is((await api.call('PUT', friendPath(id), world.accepted, { body: { name: 'x' } })).status, 405);
    t.is((await api.call('DELETE', friendPath(id), world.accepted)).status, 405);
  }
  t.is((await api.call('GET', `/activities/${world.privateRun}`, world.owner)).body.name, 'Morning run');
});

test.serial(
  "the accepted friend's list holds what followers see, masked: no thumbnail, no start point where the map is theirs to see trimmed or not at all",
  async (t) => {
    await db
      .updateTable('activities')
      .set({ thumbnail: 'https://example.com/t.png' })
      .where('user_id', '=', world.owner.ldid)
      .execute();
    const list = await api.call('GET', friendPath(), world.accepted);
    t.deepEqual(ids(list.body), [world.publicRun, world.followersRun]);
    for (const a of list.body['hydra:member']) {
      t.is(a.thumbnail, null);
      t.is(a.latitude, null);
    }
    // The followers run: its track without 200 m at each end.
    const followers = await api.call('GET', friendPath(world.followersRun), world.accepted);
    const shown = Object.keys(followers.body.locations).map(Number);
    t.true(shown.length > 50 && shown.length < 70, `${shown.length} points`);
    t.true(Math.min(...shown) >= 17 && Math.max(...shown) <= 82);
    t.is(followers.body.latitude, followers.body.locations[String(Math.min(...shown))].latitude);
    t.is(Object.keys(followers.body.datastream).length, 100, 'the figures are whole');
    t.is(followers.body.thumbnail, null);
    // The public run: no map at all, for the friend as for everyone.
    for (const res of [
      await api.call('GET', friendPath(world.publicRun), world.accepted),
      await api.call('GET', `/public_activities/${world.publicRun}`, world.stranger),
    ]) {
      t.deepEqual(res.body.locations, {});
      t.is(res.body.latitude, null);
      t.is(Object.keys(res.body.datastream).length, 100);
    }
    // The owner's own read is whole.
    const own = await api.call('GET', `/activities/${world.followersRun}`, world.owner);
    t.is(Object.keys(own.body.locations).length, 100);
    t.is(own.body.thumbnail, 'https://example.com/t.png');
  },
);

test.serial(
  "a friend's statistics are the owner's figures; the friend's own lists, statistics and similar activities hold none of the owner's",
  async (t) => {
    const friendStats = await api.call(
      'GET',
      `/share_users_stats/${world.shares.accepted}?type=year&exists[sport]=false&datatype=98`,
      world.accepted,
    );
    const ownerStats = await api.call('GET', '/user_sumups?type=year&exists[sport]=false&datatype=98', world.owner);
    t.true(ownerStats.body['hydra:member'].length > 0);
    t.deepEqual(
      friendStats.body['hydra:member'].map((s: { value: number; period: string }) => [s.period, s.value]),
      ownerStats.body['hydra:member'].map((s: { value: number; period: string }) => [s.period, s.value]),
    );
    const mine = await api.call('POST', '/activities', world.accepted, {
      body: activity(world.accepted, { ...track(100), startdate: '2024-05-04T08:00:00Z' }),
    });
    await rebuildUserSumups(db, world.accepted.ldid);
    t.deepEqual(ids((await api.call('GET', '/activities', world.accepted)).body), [mine.body.id]);
    const own = await api.call('GET', '/user_sumups?type=year&exists[sport]=false&datatype=98', world.accepted);
    t.deepEqual(
      own.body['hydra:member'].map((s: { value: number }) => s.value),
      [1],
    );
    // The owner's runs have the same distance: still none of them (the list holds the activity itself).
    t.deepEqual(ids((await api.call('GET', `/activities/${mine.body.id}/similar/5`, world.accepted)).body), [
      mine.body.id,
    ]);
    t.deepEqual(ids((await api.call('GET', '/feed', world.accepted)).body), [world.publicRun, world.followersRun]);
  },
);

test.serial(
  'a revoked share closes at once; an activity made private leaves the friend’s view with the change',
  async (t) => {
    const friend = await athlete();
    const id = await world.shareWith(friend, 'accepted');
    t.is((await api.call('GET', friendPath(world.followersRun), friend)).status, 200);
    const refusedNow = await api.call('PUT', `/share_users/${id}`, friend, { body: { status: 'refused' } });
    t.is(refusedNow.status, 200);
    t.is((await api.call('GET', friendPath(world.followersRun), friend)).status, 404);
    t.is((await api.call('PUT', `/share_users/${id}`, friend, { body: { status: 'accepted' } })).status, 200);
    t.is((await api.call('GET', friendPath(world.followersRun), friend)).status, 200);
    t.is((await api.call('DELETE', `/share_users/${id}`, world.owner)).status, 204);
    t.is((await api.call('GET', friendPath(world.followersRun), friend)).status, 404);
    t.is((await api.call('GET', friendPath(), friend)).status, 404);
    t.deepEqual(ids((await api.call('GET', '/feed', friend)).body), []);

    const hidden = await world.created({ startdate: '2024-05-05T08:00:00Z', visibility: 'followers' });
    t.is((await api.call('GET', friendPath(hidden), world.accepted)).status, 200);
    t.is(
      (await api.call('PUT', `/activities/${hidden}`, world.owner, { body: { visibility: 'private' } })).status,
      200,
    );
    t.is((await api.call('GET', friendPath(hidden), world.accepted)).status, 404);
    t.false(ids((await api.call('GET', '/feed', world.accepted)).body).includes(hidden));
  },
);
