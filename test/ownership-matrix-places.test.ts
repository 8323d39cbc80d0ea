import { randomUUID } from 'node:crypto';
import test from 'ava';
import sharp from 'sharp';
import { ADMIN_SCOPE, API_SCOPES } from '../shared/auth/scopes.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import {
  anonymousExpectation,
  fillPath,
  type MatrixCase,
  type MatrixOperation,
  matrixOperations,
  namingProblems,
  runCases,
} from './helpers/ownership-matrix.ts';
import { call, placeBody } from './helpers/places.ts';
import { mintToken } from './helpers/tokens.ts';

// The ownership matrix of the places service (places, their activities, tags and pictures,
// moderation, the sports' rules), generated from /openapi.json (helpers/ownership-matrix.ts).
// A user's place is pending until staff approve it, and out of sight again once rejected: nobody
// else sees it (a staff account whose token lacks `admin` included), so another user gets 404 on
// every operation on it, and nothing changes. Once approved it is public: reads answer 200, the
// creator's writes 403 (docs/places.md: PUT and DELETE by a non-creator), and activities, tags
// and pictures are crowdsourced (any signed-in user may write them). Staff-only operations answer
// 403 before the place is looked up, for an unknown id alike, so they disclose nothing.

let api: TestApi;
let operations: MatrixOperation[];
let staff: { token: string };
let png: Buffer;
test.before(async () => {
  api = await startTestApi(null);
  operations = await matrixOperations(api, 'places');
  staff = await api.account(['staff']);
  png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#3a6' } })
    .png()
    .toBuffer();
});
test.after.always(() => api?.close());

type Visibility = 'pending' | 'rejected' | 'approved';

interface Row {
  /** What the operation acts on. */
  object: 'place' | 'activity' | 'activity tag' | 'picture' | 'sport rules';
  /** Another user's answer on a place they cannot see (pending, rejected) and on an approved one; one number when the place does not matter. */
  other: number | { hidden: number; approved: number };
  /** A valid write (an invalid one is a 422 whoever owns the object, which tells nothing), or what makes one. */
  body?: unknown;
  /** Path values besides `place_id` and the sport. */
  params?: Record<string, string>;
}

/** Reads: invisible until approved, public once approved. */
const READ = { hidden: 404, approved: 200 };
/** The creator's writes: 403 where the caller sees the place (docs/places.md). */
const CREATOR = { hidden: 404, approved: 403 };
/** Crowdsourced writes: any signed-in user who sees the place. */
const crowd = (status: number) => ({ hidden: 404, approved: status });
/** Staff only, checked before the object is looked up. */
const STAFF = 403;

const TAGS = ['floodlight', 'indoor'];
const picture = () => {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'court.png');
  return form;
};

const MATRIX: Record<string, Row> = {
  'GET /api/v1/places/{place_id}': { object: 'place', other: READ },
  'PUT /api/v1/places/{place_id}': { object: 'place', other: CREATOR, body: { phone: '+33 3 20 00 00 00' } },
  'POST /api/v1/places/{place_id}': { object: 'place', other: CREATOR, body: { phone: '+33 3 20 00 00 00' } },
  'DELETE /api/v1/places/{place_id}': { object: 'place', other: CREATOR },
  'POST /api/v1/places/{place_id}/approve': { object: 'place', other: STAFF },
  'POST /api/v1/places/{place_id}/reject': { object: 'place', other: STAFF },
  'GET /api/v1/places/{place_id}/activities': { object: 'activity', other: READ },
  'POST /api/v1/places/{place_id}/activities': {
    object: 'activity',
    other: crowd(201),
    body: { sport_id: 121, tags: ['flat'] },
  },
  'PUT /api/v1/places/{place_id}/activities': {
    object: 'activity',
    other: crowd(200),
    body: { activities: [{ sport_id: 357, tags: TAGS }] },
  },
  'PUT /api/v1/places/{place_id}/activities/{sport_id}': {
    object: 'activity',
    other: crowd(200),
    body: { tags: TAGS },
  },
  'POST /api/v1/places/{place_id}/activities/{sport_id}': {
    object: 'activity',
    other: crowd(200),
    body: { tags: TAGS },
  },
  // Deleting an activity: its creator, the place's creator or staff (docs/places.md).
  'DELETE /api/v1/places/{place_id}/activities/{sport_id}': { object: 'activity', other: CREATOR },
  'GET /api/v1/places/{place_id}/activities/{sport_id}/tags': { object: 'activity tag', other: READ },
  'POST /api/v1/places/{place_id}/activities/{sport_id}/tags': {
    object: 'activity tag',
    other: crowd(200),
    body: { slug: 'indoor' },
  },
  'DELETE /api/v1/places/{place_id}/activities/{sport_id}/tags/{slug}': {
    object: 'activity tag',
    other: crowd(200),
    params: { slug: 'indoor' },
  },
  'GET /api/v1/places/{place_id}/tags': { object: 'activity tag', other: READ },
  'POST /api/v1/places/{place_id}/tags': {
    object: 'activity tag',
    other: crowd(200),
    body: { slug: 'indoor', sport_id: 357 },
  },
  'POST /v1/places/{place_id}/activities/{activity_id}/images': { object: 'picture', other: crowd(201), body: picture },
  // The sports' allowed tags and filters: a public referential that staff change.
  'GET /api/v1/sports/{sport_id}': { object: 'sport rules', other: 200 },
  'GET /api/v1/sports/{sport_id}/filters': { object: 'sport rules', other: 200 },
  'GET /api/v1/sports/{sport_id}/tags': { object: 'sport rules', other: 200 },
  'POST /api/v1/sports/{sport_id}/filters': { object: 'sport rules', other: STAFF, body: { slug: 'age' } },
  'DELETE /api/v1/sports/{sport_id}/filters/{slug}': { object: 'sport rules', other: STAFF, params: { slug: 'age' } },
  'POST /api/v1/sports/{sport_id}/tags': { object: 'sport rules', other: STAFF, body: { slug: 'lessons' } },
  'DELETE /api/v1/sports/{sport_id}/tags/{slug}': { object: 'sport rules', other: STAFF, params: { slug: 'indoor' } },
};

const PUBLIC: Record<string, string> = {
  'GET /media/{path}':
    'picture files under random names: the URL is given only with the activity, to those who see the place',
};

/** A place of `owner` (a tennis court with two tags), approved or rejected by staff when asked. */
async function placeOf(owner: { token: string }, visibility: Visibility): Promise<string> {
  const activities = [{ sport_id: 357, tags: TAGS, surface: 'clay', courts: 4 }];
  const created = await call(api, 'POST', '/places', { token: owner.token, body: placeBody({ activities }) });
  if (created.status !== 201) throw new Error(`POST /places: ${created.status} ${JSON.stringify(created.body)}`);
  const uuid: string = created.body.properties.uuid;
  if (visibility !== 'pending') {
    const action = visibility === 'approved' ? 'approve' : 'reject';
    const decided = await call(api, 'POST', `/places/${uuid}/${action}`, { token: staff.token });
    if (decided.status !== 200) throw new Error(`${action}: ${decided.status}`);
  }
  return uuid;
}

/** The place as its owner sees it; the activities too unless the place is approved (they are crowdsourced). */
async function ownerView(owner: { token: string }, uuid: string, visibility: Visibility) {
  const { properties } = (await call(api, 'GET', `/places/${uuid}`, { token: owner.token })).body;
  if (visibility === 'approved') delete properties.activities;
  return JSON.stringify(properties);
}

test('every places operation with an id is in the matrix', (t) => {
  t.deepEqual(namingProblems(operations, [...Object.keys(MATRIX), ...Object.keys(PUBLIC)]), []);
  t.true(operations.length >= 25, String(operations.length));
});

test("another user gets 404 on a place they cannot see, the documented answers on an approved one, a caller without a token 401, and nothing of the owner's changes", async (t) => {
  const owner = await api.account();
  const other = await api.account();
  const notAdmin = await mintToken(api.database.db, api.config, await api.account(['staff']), {
    scopes: API_SCOPES.filter((s) => s !== ADMIN_SCOPE),
  });
  const visibilities: Visibility[] = ['pending', 'rejected', 'approved'];
  const places = Object.fromEntries(await Promise.all(visibilities.map(async (v) => [v, await placeOf(owner, v)])));
  // The owner's change of the approved place waits for staff: nobody else sees it.
  const edit = await call(api, 'PUT', `/places/${places.approved}`, { token: owner.token, body: { name: 'Mine' } });
  t.is(edit.body.properties.pending_edits.length, 1);
  const seen = (await call(api, 'GET', `/places/${places.approved}`, { token: other.token })).body.properties;
  t.deepEqual([seen.name === 'Mine', seen.pending_edits], [false, []]);
  const before = await Promise.all(visibilities.map((v) => ownerView(owner, places[v], v)));
  const cases: MatrixCase[] = [];
  for (const op of operations) {
    const row = MATRIX[op.name];
    if (!row) continue;
    // The sports' rules are the same whatever the place; staff-only place operations are sent on each.
    const where = row.object === 'sport rules' ? (['approved'] as const) : visibilities;
    for (const visibility of where) {
      const { other: answers } = row;
      const expected =
        typeof answers === 'number' ? answers : visibility === 'approved' ? answers.approved : answers.hidden;
      const values = { place_id: places[visibility], sport_id: '357', activity_id: '357', ...row.params };
      const base = {
        op,
        path: fillPath(op.path, values),
        body: typeof row.body === 'function' ? row.body() : row.body,
      };
      const callers = {
        'another user': other.token,
        ...(visibility === 'approved' ? {} : { 'staff without admin': notAdmin }),
      };
      const asOthers = Object.entries(callers).map(([who, token]) => ({
        ...base,
        who: `as ${who} (${visibility})`,
        authorization: `Bearer ${token}`,
        expected,
      }));
      cases.push(...asOthers, {
        ...base,
        who: `without a token (${visibility})`,
        expected: anonymousExpectation(op, expected),
      });
      // A 403 whatever the place is a role check: an unknown place or sport must get it too.
      if (typeof answers === 'number' && expected === 403 && visibility === where[0]) {
        const unknown = fillPath(op.path, { ...values, place_id: randomUUID(), sport_id: '999999' });
        cases.push(...asOthers.map((c) => ({ ...c, path: unknown, who: `${c.who}, unknown id` })));
      }
    }
  }
  t.true(cases.length >= 150, String(cases.length));
  t.deepEqual(await runCases(api, cases), []);
  t.deepEqual(await Promise.all(visibilities.map((v) => ownerView(owner, places[v], v))), before);
  const activities = await call(api, 'GET', `/places/${places.approved}/activities`, { token: owner.token });
  t.true(
    activities.body.some((a: { sport_id: number }) => a.sport_id === 357),
    'the approved activity is still there',
  );
  const tennis = await call(api, 'GET', '/sports/357', {});
  t.true(
    tennis.body.filters.includes('age') && tennis.body.tags.includes('indoor'),
    'the sport rules are as they were',
  );
});

test('featured and partner: partner accounts only, on places they can see (docs/places.md)', async (t) => {
  const owner = await api.account();
  const partner = await api.account(['partner']);
  const approved = await placeOf(owner, 'approved');
  const pending = await placeOf(owner, 'pending');
  const put = (uuid: string, token: string) => call(api, 'PUT', `/places/${uuid}`, { token, body: { featured: true } });
  t.is((await put(approved, owner.token)).status, 403, 'the creator is not a partner');
  t.is((await put(approved, staff.token)).status, 403, 'nor is staff');
  t.is((await put(pending, partner.token)).status, 404, "a partner does not see another user's pending place");
  const featured = await put(approved, partner.token);
  t.is(featured.status, 200);
  t.true(featured.body.properties.featured);
});
