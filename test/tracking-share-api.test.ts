import test from 'ava';
import { SHARE_PAGE_CSP } from '../api/tracking/share-page.ts';
import { MAX_SHARES_PER_ACTIVITY, SHARE_TOKEN_BYTES } from '../shared/tracking/shares/store.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

const api = await startTrackingApi();
test.after.always(() => api.close());

const { db } = api.database;
const me = (u: TrackingTestUser) => `/v2/users/${u.ldid}`;
// biome-ignore lint/suspicious/noExplicitAny: response bodies are parsed JSON, read member by member
type Body = Record<string, any>;

/** An activity of `u` with a short datastream and track; returns its id. */
async function activityOf(u: TrackingTestUser, fields: Body = {}): Promise<string> {
  // Tests create the same activity several times for one user: kept, not refused as duplicates.
  const res = await api.call('POST', '/activities?duplicates=keep', u, {
    body: {
      name: 'Morning run',
      user: me(u),
      sport: '/v2/sports/121',
      startdate: '2024-05-01T08:30:00+02:00',
      duration: 2,
      dataSummaries: { '5': 12.5, '24': 2, '9': 22_500 },
      datastream: { '0': { '1': 92, '6': 20_000 }, '1': { '1': 95 }, '2': { '1': 97, '6': 25_000 } },
      locations: {
        '0': { latitude: 50.6292, longitude: 3.0573, elevation: 21.5 },
        '1': { latitude: 50.62925, longitude: 3.05735, elevation: 22 },
        '2': { latitude: 50.6293, longitude: 3.0574, elevation: 22.5 },
      },
      ...fields,
    },
  });
  if (res.status !== 201) throw new Error(`POST /activities answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.id;
}

const share = (u: TrackingTestUser, activityId: string, user = me(u)) =>
  api.call('POST', '/share_activities', u, { body: { user, activity: `/v2/activities/${activityId}` } });

async function shared(u: TrackingTestUser, activityId?: string): Promise<{ token: string; activityId: string }> {
  const id = activityId ?? (await activityOf(u));
  const res = await share(u, id);
  if (res.status !== 201) throw new Error(`POST /share_activities answered ${res.status}: ${JSON.stringify(res.body)}`);
  return { token: res.body.id, activityId: id };
}

/** The public read: the API key and no token. */
const publicGet = (token: string, accept?: string) =>
  api.call('GET', `/share_activities/${token}`, null, accept ? { headers: { accept } } : {});

const violations = (body: { violations: { propertyPath: string; message: string }[] }) =>
  body.violations.map((v) => v.propertyPath);

test('POST shares an activity: 201, a ShareActivity with a 256-bit token as id and the whole Activity embedded', async (t) => {
  const u = await api.user();
  const activityId = await activityOf(u);
  const res = await share(u, activityId);
  t.is(res.status, 201, JSON.stringify(res.body));
  t.regex(res.headers.get('content-type') ?? '', /^application\/ld\+json/);
  const s = res.body;
  t.regex(s.id, /^[A-Za-z0-9_-]{43}$/);
  t.like(s, {
    '@context': '/v2/contexts/ShareActivity',
    '@id': `/v2/share_activities/${s.id}`,
    '@type': 'ShareActivity',
    user: me(u),
  });
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}/v2/share_activities/${s.id}`);
  t.like(s.activity, {
    '@id': `/v2/activities/${activityId}`,
    '@type': 'Activity',
    id: activityId,
    name: 'Morning run',
  });
  t.deepEqual(s.activity.datastream, { '0': { '1': 92, '6': 20000 }, '1': { '1': 95 }, '2': { '1': 97, '6': 25000 } });
  t.deepEqual(s.activity.locations['2'], { latitude: 50.6293, longitude: 3.0574, elevation: 22.5 });
  t.regex(s.createdAt, /\+00:00$/);
  t.is(s.updatedAt, s.createdAt);
});

test('GET with only the API key answers ld+json by default, plain JSON or the HTML page by Accept', async (t) => {
  const u = await api.user();
  const { token, activityId } = await shared(u);

  const ld = await publicGet(token);
  t.is(ld.status, 200, JSON.stringify(ld.body));
  t.regex(ld.headers.get('content-type') ?? '', /^application\/ld\+json/);
  t.like(ld.body, { '@id': `/v2/share_activities/${token}`, '@type': 'ShareActivity', id: token, user: me(u) });
  t.is(ld.body.activity.id, activityId);
  t.deepEqual(Object.keys(ld.body.activity.datastream), ['0', '1', '2']);
  t.deepEqual(Object.keys(ld.body.activity.locations), ['0', '1', '2']);

  const json = await publicGet(token, 'application/json');
  t.is(json.status, 200);
  t.regex(json.headers.get('content-type') ?? '', /^application\/json/);
  t.false('@context' in json.body || '@id' in json.body || '@type' in json.body);
  t.false('@id' in json.body.activity);
  t.is(json.body.id, token);
  t.deepEqual(json.body.activity.datastream, ld.body.activity.datastream);

  const html = await publicGet(token, 'text/html');
  t.is(html.status, 200);
  t.regex(html.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
  t.is(html.headers.get('content-security-policy'), SHARE_PAGE_CSP);
  t.is(html.headers.get('cache-control'), 'no-store');
  t.regex(html.body, /<h1>Morning run<\/h1>/);
  t.regex(html.body, /<svg [^>]*aria-label="GPS track"/);
  t.regex(html.body, /<dd>0\.01 km<\/dd>/, 'distance with its unit');
  t.regex(html.body, /<dt>Average pace<\/dt><dd>2:40 \/km<\/dd>/, 'a run: the average speed as a pace');
  t.regex(
    html.body,
    /<dt>Duration<\/dt><dd>0:00:02<\/dd><\/div><div><dt>Distance<\/dt>.*<dt>Average pace<\/dt>/,
    'summary order',
  );
  t.regex(html.body, /<h3 id="title-pace">Pace \(min\/km\)<\/h3>/);
  // A ride keeps its speed in km/h.
  const ride = await shared(u, await activityOf(u, { name: 'Ride', sport: '/v2/sports/381' }));
  const rideHtml = (await publicGet(ride.token, 'text/html')).body;
  t.regex(rideHtml, /<dt>Speed avg<\/dt><dd>22\.5 km\/h<\/dd>/, 'average speed from m/h to km/h');
  t.regex(rideHtml, /<h3 id="title-speed">Speed \(km\/h\)<\/h3>/);

  // A browser's Accept picks the page; an Accept nothing matches is a 406.
  const browser = await publicGet(token, 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8');
  t.regex(browser.headers.get('content-type') ?? '', /^text\/html/);
  t.is((await publicGet(token, 'image/png')).status, 406);
});

test('the share url opens the page in a browser with no credentials, until the share is deleted', async (t) => {
  const u = await api.user();
  const created = await share(u, await activityOf(u));
  const token = created.body.id;
  t.is(created.body.url, `${api.config.PUBLIC_URL}/v2/share_activities/${token}/page`);
  const path = new URL(created.body.url).pathname;
  // What a browser sends when a person follows the link: no x-api-key, no bearer.
  const accept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
  const page = await api.fetch(path, { headers: { accept } });
  t.is(page.status, 200);
  t.regex(page.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
  t.is(page.headers.get('content-security-policy'), SHARE_PAGE_CSP);
  t.is(page.headers.get('cache-control'), 'no-store');
  t.is(page.headers.get('referrer-policy'), 'no-referrer');
  t.is(page.headers.get('x-robots-tag'), 'noindex');
  t.regex(await page.text(), /<h1>Morning run<\/h1>/);
  // Any Accept gets the page: a link is opened by browsers, mail readers and chat previews alike.
  t.is((await api.fetch(path)).status, 200);
  // The list and the key read carry the same url.
  const listed = await api.call('GET', '/share_activities', u);
  t.is(listed.body['hydra:member'][0].url, created.body.url);
  t.is((await publicGet(token)).body.url, created.body.url);

  t.is((await api.call('DELETE', `/share_activities/${token}`, u)).status, 204);
  const gone = await api.fetch(path, { headers: { accept } });
  t.is(gone.status, 404);
  t.regex(gone.headers.get('content-type') ?? '', /^text\/html/);
  t.is(gone.headers.get('cache-control'), 'no-store');
  t.regex(await gone.text(), /cannot be shown/);
  for (const bad of ['AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'x', '%3Cscript%3E'])
    t.is((await api.fetch(`/v2/share_activities/${bad}/page`)).status, 404, bad);
});

test('the public GET needs the API key (401 in the Hydra format); a bearer token is not needed', async (t) => {
  const u = await api.user();
  const { token } = await shared(u);
  const res = await api.fetch(`/v2/share_activities/${token}`);
  t.is(res.status, 401);
  t.regex(res.headers.get('content-type') ?? '', /json/);
  t.like(await res.json(), { '@type': 'hydra:Error' });
  const wrongKey = await api.fetch(`/v2/share_activities/${token}`, { headers: { 'x-api-key': 'not-a-key' } });
  t.is(wrongKey.status, 401);
  // Another user's token on the request changes nothing: the share is public.
  const other = await api.user();
  t.is((await api.call('GET', `/share_activities/${token}`, other)).status, 200);
});

test('an unknown, malformed or revoked token is a 404', async (t) => {
  const u = await api.user();
  const { token } = await shared(u);
  for (const bad of ['A'.repeat(43), 'short', '%3Cscript%3E', token.slice(0, -1), `${token}x`]) {
    const res = await publicGet(bad);
    t.is(res.status, 404, bad);
    t.like(res.body, { '@type': 'hydra:Error' });
  }
  const other = await api.user();
  t.is((await api.call('DELETE', `/share_activities/${token}`, other)).status, 404, "another user's share");
  t.is((await publicGet(token)).status, 200, 'still shared');
  t.is((await api.call('DELETE', `/share_activities/${token}`, null)).status, 401);

  const revoked = await api.call('DELETE', `/share_activities/${token}`, u);
  t.is(revoked.status, 204);
  t.is((await publicGet(token)).status, 404);
  t.is((await publicGet(token, 'text/html')).status, 404);
  t.is((await api.call('DELETE', `/share_activities/${token}`, u)).status, 404);
});

test("sharing another user's activity, a missing one, or in another user's name is a 422 naming the field", async (t) => {
  const owner = await api.user();
  const intruder = await api.user();
  const activityId = await activityOf(owner);

  const theirs = await share(intruder, activityId);
  t.is(theirs.status, 422);
  t.deepEqual(violations(theirs.body), ['activity']);
  const missing = await share(intruder, 'f'.repeat(32));
  t.deepEqual(violations(missing.body), ['activity']);
  t.is(missing.body.violations[0].message, theirs.body.violations[0].message, 'no existence leak');

  const asOwner = await share(intruder, await activityOf(intruder), me(owner));
  t.is(asOwner.status, 422);
  t.deepEqual(violations(asOwner.body), ['user']);

  for (const [body, field] of [
    [{ activity: `/v2/activities/${activityId}` }, 'user'],
    [{ user: me(owner) }, 'activity'],
    [{ user: me(owner), activity: 'activity-1' }, 'activity'],
    [{ user: me(owner), activity: `/v2/activities/${activityId}`, extra: 1 }, 'extra'],
  ] as const) {
    const res = await api.call('POST', '/share_activities', owner, { body });
    t.is(res.status, 422, JSON.stringify(body));
    t.true(
      res.body.violations.some((v: { propertyPath: string }) => v.propertyPath === field),
      JSON.stringify(res.body),
    );
  }
  // What a read answered may be sent back: its read-only members are ignored.
  const echoed = await api.call('POST', '/share_activities', owner, {
    body: {
      '@context': '/v2/contexts/ShareActivity',
      '@type': 'ShareActivity',
      id: 'x',
      user: me(owner),
      activity: `/v2/activities/${activityId}`,
    },
  });
  t.is(echoed.status, 201);
  t.not(echoed.body.id, 'x');
  t.is((await api.call('POST', '/share_activities', null, { body: {} })).status, 401);
  t.is((await db.selectFrom('share_activities').selectAll().where('user_id', '=', intruder.ldid).execute()).length, 0);
});

test('tokens: 256 random bits each, base64url, never repeated, their bits balanced', async (t) => {
  const u = await api.user();
  const activityIds = await Promise.all(Array.from({ length: 4 }, () => activityOf(u)));
  const tokens: string[] = [];
  for (const activityId of activityIds)
    for (let i = 0; i < 15; i++) tokens.push((await share(u, activityId)).body.id as string);
  t.is(new Set(tokens).size, tokens.length);
  let ones = 0;
  for (const token of tokens) {
    t.regex(token, /^[A-Za-z0-9_-]+$/);
    const bytes = Buffer.from(token, 'base64url');
    t.is(bytes.length, SHARE_TOKEN_BYTES);
    t.true(bytes.length * 8 >= 128);
    for (const byte of bytes) for (let b = 0; b < 8; b++) ones += (byte >> b) & 1;
  }
  // 60 × 256 bits: a fair source gives 50 % ones ± 0.4 % (1σ); 3 % off would be 7σ.
  const share_ = ones / (tokens.length * SHARE_TOKEN_BYTES * 8);
  t.true(share_ > 0.47 && share_ < 0.53, `share of 1 bits ${share_}`);
});

test('an activity has at most MAX_SHARES_PER_ACTIVITY shares at once; revoking one frees a place', async (t) => {
  const u = await api.user();
  const activityId = await activityOf(u);
  const tokens: string[] = [];
  for (let i = 0; i < MAX_SHARES_PER_ACTIVITY; i++) tokens.push((await shared(u, activityId)).token);
  const over = await share(u, activityId);
  t.is(over.status, 422);
  t.deepEqual(violations(over.body), ['activity']);
  t.regex(over.body.violations[0].message, new RegExp(`${MAX_SHARES_PER_ACTIVITY} shares`));
  t.is((await api.call('DELETE', `/share_activities/${tokens[0]}`, u)).status, 204);
  t.is((await share(u, activityId)).status, 201);
});

test("GET /share_activities lists the caller's shares newest first, filtered by user and activity, paged", async (t) => {
  const u = await api.user();
  const other = await api.user();
  const a1 = await activityOf(u);
  const a2 = await activityOf(u);
  const first = (await shared(u, a1)).token;
  const second = (await shared(u, a2)).token;
  const third = (await shared(u, a1)).token;
  await shared(other);

  const all = await api.call('GET', '/share_activities', u);
  t.is(all.status, 200);
  t.like(all.body, { '@type': 'hydra:Collection', 'hydra:totalItems': 3 });
  t.deepEqual(
    all.body['hydra:member'].map((m: Body) => m.id),
    [third, second, first],
  );
  const member = all.body['hydra:member'][0];
  t.like(member, { '@id': `/v2/share_activities/${third}`, '@type': 'ShareActivity', user: me(u) });
  t.like(member.activity, { '@id': `/v2/activities/${a1}`, '@type': 'Activity', id: a1 });
  t.false('datastream' in member.activity, 'the list embeds activities without their streams');
  t.true(
    all.body['hydra:search']['hydra:mapping'].some((m: Body) => m.variable === 'activity[]'),
    'filters documented in hydra:search',
  );

  const byActivity = await api.call('GET', `/share_activities?activity=/v2/activities/${a1}`, u);
  t.deepEqual(
    byActivity.body['hydra:member'].map((m: Body) => m.id),
    [third, first],
  );
  const both = await api.call(
    'GET',
    `/share_activities?activity[]=/v2/activities/${a1}&activity[]=/v2/activities/${a2}`,
    u,
  );
  t.is(both.body['hydra:totalItems'], 3);
  t.is((await api.call('GET', `/share_activities?user=${me(u)}`, u)).body['hydra:totalItems'], 3);
  t.is((await api.call('GET', `/share_activities?user=${me(other)}`, u)).body['hydra:totalItems'], 0);

  const plain = await api.call('GET', '/share_activities', u, { headers: { accept: 'application/json' } });
  t.true(Array.isArray(plain.body));
  t.deepEqual(Object.keys(plain.body[0]), ['id', 'user', 'url', 'createdAt', 'updatedAt', 'activity']);
  t.false('@id' in plain.body[0].activity, 'no JSON-LD member at any level');
  t.is(plain.body[0].activity.id, a1);

  const page = await api.call('GET', '/share_activities?limit=2&page=2', u);
  t.deepEqual(
    page.body['hydra:member'].map((m: Body) => m.id),
    [first],
  );
  for (const bad of ['limit=101', 'page=0', 'activity=nope', 'user=/v2/sports/1'])
    t.is((await api.call('GET', `/share_activities?${bad}`, u)).status, 422, bad);
  t.is((await api.call('GET', '/share_activities', null)).status, 401);
});

test('deleting the activity deletes its shares; the list query uses the share indexes', async (t) => {
  const u = await api.user();
  const { token, activityId } = await shared(u);
  t.is((await api.call('DELETE', `/activities/${activityId}`, u)).status, 204);
  t.is((await publicGet(token)).status, 404);

  const plan = async (where: string) => {
    const { sql } = await import('kysely');
    await sql`set enable_seqscan = off`.execute(db);
    const rows = await sql<{
      'QUERY PLAN': string;
    }>`explain select * from share_activities where ${sql.raw(where)} order by created_at desc, token desc limit 30`.execute(
      db,
    );
    await sql`reset enable_seqscan`.execute(db);
    return rows.rows.map((r) => r['QUERY PLAN']).join('\n');
  };
  t.regex(await plan(`user_id = 'x'`), /share_activities_user_idx/);
  t.regex(await plan(`user_id = 'x' and activity_id in ('a', 'b')`), /share_activities_(activity|user)_idx/);
});

test('the page escapes every user string: an activity named <script> shows the text, runs nothing', async (t) => {
  const u = await api.user();
  const name = `<script>alert("x")</script><img src=x onerror=alert(1)> & "quotes" 'too'`;
  const { token } = await shared(u, await activityOf(u, { name }));
  const html = (await publicGet(token, 'text/html')).body as string;
  t.false(html.includes('<script>alert'));
  t.false(html.includes('<img src=x'));
  t.true(html.includes('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;'));
  // Exactly the three scripts of the page: the data block, uPlot and the page's own.
  t.is(html.match(/<script[\s>]/g)?.length, 3);
  const data = /<script type="application\/json" id="share-data">([^<]*)<\/script>/.exec(html)?.[1];
  t.truthy(data, 'the chart data holds no "<"');
});
