import test from 'ava';
import { startTestApi } from './helpers/app.ts';
import { call, createPlace, paths, placeBody, type Res } from './helpers/places.ts';

// Each test replays an attack over HTTP (docs/places.md, "Moderation", "external_place_id").
const api = await startTestApi(null);
const staff = await api.account(['staff']);
const author = await api.account(['user'], { first_name: 'Ada', last_name: 'Author' });
const stranger = await api.account(['user']);
test.after.always(api.close);

type Feature = { properties: { uuid: string; name: string } };
const approve = (uuid: string) => call(api, 'POST', `/places/${uuid}/approve`, { token: staff.token });
const reject = (uuid: string) => call(api, 'POST', `/places/${uuid}/reject`, { token: staff.token });
const get = (uuid: string, token?: string, lang?: string) =>
  call(api, 'GET', `/places/${uuid}`, {
    ...(token ? { token } : {}),
    ...(lang ? { headers: { 'accept-language': lang } } : {}),
  });
/** Staff approve a place's pending edits as reviewed: naming the newest revision they read. */
async function approveReviewed(uuid: string) {
  const edits: { revision: string }[] = (await get(uuid, staff.token)).body.properties.pending_edits ?? [];
  const newest = edits.map((e) => e.revision).sort((a, b) => Number(BigInt(a) - BigInt(b)))[edits.length - 1];
  return call(api, 'POST', `/places/${uuid}/approve${newest ? `?revision=${newest}` : ''}`, { token: staff.token });
}
const listed = (res: Res, uuid: string) => res.body.some((f: Feature) => f.properties.uuid === uuid);

/** A place of `author`, approved by staff, alone around its own point (so a search finds it first). */
async function approvedPlace(lng: number, overrides: Record<string, unknown> = {}) {
  const res = await call(api, 'POST', '/places', {
    token: author.token,
    body: placeBody({ geometry: { type: 'Point', coordinates: [lng, 45] }, ...overrides }),
  });
  if (res.status !== 201) throw new Error(`create failed ${res.status} ${JSON.stringify(res.body)}`);
  const approved = await approve(res.body.properties.uuid);
  if (approved.status !== 200) throw new Error(`approve failed ${approved.status}`);
  return approved.body.properties;
}

test('a user edit of an approved place stays out of public view until staff approve it; staff edits apply at once', async (t) => {
  const p = await approvedPlace(10, { name: 'Club Honnête', website: 'https://club.example' });
  const spam = { name: 'CHEAP PILLS', website: 'https://spam.example', booking_url: 'https://spam.example/buy' };
  const put = await call(api, 'PUT', `/places/${p.uuid}`, { token: author.token, body: spam });
  t.is(put.status, 200);
  t.is(put.body.properties.status, 'approved');
  t.is(put.body.properties.name, 'Club Honnête', 'the answer shows the public version');
  t.like(put.body.properties.pending_edits[0], { user: { identifier: author.id }, fields: spam });

  for (const token of [undefined, stranger.token]) {
    const seen = (await get(p.uuid, token)).body.properties;
    t.is(seen.name, 'Club Honnête');
    t.is(seen.contact_details.website, 'https://club.example');
    t.is(seen.contact_details.booking_url, null);
    t.deepEqual(seen.pending_edits, [], 'the edit is shown to its author and staff only');
  }
  const search = await call(api, 'GET', '/places?origin=10,45&radius=1');
  t.is(search.body.data.features[0].properties.name, 'Club Honnête');
  t.is(search.body.data.features[0].properties.contact_details.website, 'https://club.example');

  t.like((await get(p.uuid, author.token)).body.properties.pending_edits[0], { fields: spam });
  t.like((await get(p.uuid, staff.token)).body.properties.pending_edits[0], { fields: spam });
  t.true(listed(await call(api, 'GET', '/places/pending', { token: author.token }), p.uuid));
  t.true(listed(await call(api, 'GET', '/places/pending?all=true', { token: staff.token }), p.uuid));
  t.false(listed(await call(api, 'GET', '/places/pending', { token: stranger.token }), p.uuid));

  // Approving needs the revision staff reviewed: an edit changed since is never applied unseen.
  const missing = await approve(p.uuid);
  t.is(missing.status, 422);
  t.deepEqual(paths(missing), ['query.revision']);
  const reviewed = (await get(p.uuid, staff.token)).body.properties.pending_edits[0].revision;
  // A second edit merges into the pending one.
  await call(api, 'PUT', `/places/${p.uuid}`, { token: author.token, body: { name: 'Club Renamed' } });
  const stale = await call(api, 'POST', `/places/${p.uuid}/approve?revision=${reviewed}`, { token: staff.token });
  t.is(stale.status, 409);
  t.is((await get(p.uuid)).body.properties.name, 'Club Honnête');
  const ok = await approveReviewed(p.uuid);
  t.is(ok.status, 200);
  t.is(ok.body.properties.name, 'Club Renamed');
  t.deepEqual(ok.body.properties.pending_edits, []);
  const now = (await get(p.uuid)).body.properties;
  t.is(now.name, 'Club Renamed');
  t.is(now.contact_details.website, 'https://spam.example');
  t.false(listed(await call(api, 'GET', '/places/pending?all=true', { token: staff.token }), p.uuid));

  const byStaff = await call(api, 'PUT', `/places/${p.uuid}`, { token: staff.token, body: { name: 'Club Fixed' } });
  t.is(byStaff.body.properties.name, 'Club Fixed');
  t.deepEqual(byStaff.body.properties.pending_edits, []);
  t.is((await get(p.uuid)).body.properties.name, 'Club Fixed');
});

test('localized notes edited by the author wait too; reject drops the edit and keeps the approved place', async (t) => {
  const p = await approvedPlace(11, { notes: 'Good courts' });
  const put = await call(api, 'PUT', `/places/${p.uuid}`, {
    token: author.token,
    body: { notes: 'Visit spam.example' },
    headers: { 'accept-language': 'fr-FR' },
  });
  t.is(put.status, 200);
  t.is((await get(p.uuid, undefined, 'fr-FR')).body.properties.notes, 'Good courts', 'fr-FR falls back to en');
  t.like(put.body.properties.pending_edits?.[0], { notes: { 'fr-FR': 'Visit spam.example' } });

  const rejected = await reject(p.uuid);
  t.is(rejected.status, 200);
  t.is(rejected.body.properties.status, 'approved', 'reject acts on the pending edit, not on the place');
  t.deepEqual(rejected.body.properties.pending_edits, []);
  t.is((await get(p.uuid, author.token, 'fr-FR')).body.properties.notes, 'Good courts');
  t.is((await get(p.uuid)).status, 200);
  // With nothing pending any more, reject takes the place down as before.
  t.is((await reject(p.uuid)).body.properties.status, 'rejected');
  t.is((await get(p.uuid)).status, 404);
});

test("variant A by another user adds activities (crowdsourced) but cannot overwrite an approved place's notes", async (t) => {
  const ext = `ext-notes-${Math.random().toString(36).slice(2)}`;
  const p = await createPlace(api, staff.token, { external_place_id: ext, notes: 'Official notes' });
  const res = await call(api, 'POST', '/places', {
    token: stranger.token,
    body: { external_place_id: ext, activities: [{ sport_id: 121 }], notes: 'Spam notes' },
  });
  t.is(res.status, 200);
  t.is(res.body.properties.uuid, p.uuid);
  t.deepEqual(
    res.body.properties.activities.map((a: { sport_id: number }) => a.sport_id),
    [121, 357],
  );
  t.is(res.body.properties.notes, 'Official notes');
  t.deepEqual(res.body.properties.pending_edits[0].notes, { en: 'Spam notes' });
  t.is((await get(p.uuid)).body.properties.notes, 'Official notes');
  t.is((await approveReviewed(p.uuid)).body.properties.notes, 'Spam notes', 'staff may accept it');
});

const SCRIPT_URLS = [
  'javascript:alert(document.cookie)',
  'JavaScript:alert(1)',
  ' javascript:alert(1)',
  'data:text/html,<script>alert(1)</script>',
  'vbscript:msgbox(1)',
  'ftp://files.example/x',
  '//evil.example/x',
  'http:/evil.example',
  'https:evil.example',
  'https://trusted.example@evil.example/',
];

test('website and booking_url accept only absolute http(s) URLs, on POST and PUT', async (t) => {
  for (const url of SCRIPT_URLS) {
    const post = await call(api, 'POST', '/places', { token: author.token, body: placeBody({ website: url }) });
    t.is(post.status, 422, url);
    t.regex(post.headers.get('content-type') ?? '', /application\/problem\+json/);
    t.deepEqual(paths(post), ['body.website'], url);
    const book = await call(api, 'POST', '/places', { token: author.token, body: placeBody({ booking_url: url }) });
    t.deepEqual(paths(book), ['body.booking_url'], url);
  }
  const p = await createPlace(api, staff.token);
  for (const url of SCRIPT_URLS)
    for (const field of ['website', 'booking_url']) {
      const put = await call(api, 'PUT', `/places/${p.uuid}`, { token: staff.token, body: { [field]: url } });
      t.is(put.status, 422, url);
      t.deepEqual(paths(put), [`body.${field}`], url);
    }
  const good = await call(api, 'PUT', `/places/${p.uuid}`, {
    token: staff.token,
    body: { website: 'HTTPS://Club.Example/path?q=1#top', booking_url: 'http://127.0.0.1:8080/book' },
  });
  t.is(good.status, 200);
  t.like(good.body.properties.contact_details, {
    website: 'HTTPS://Club.Example/path?q=1#top',
    booking_url: 'http://127.0.0.1:8080/book',
  });
  t.is((await call(api, 'PUT', `/places/${p.uuid}`, { token: staff.token, body: { website: null } })).status, 200);
});

test('a partner link must be an absolute http(s) URL too (no relative form, no credentials)', async (t) => {
  const partner = (link: string) =>
    call(api, 'POST', '/partners', {
      token: staff.token,
      body: {
        partner: {
          user_id: Number(staff.number),
          title: 'Club',
          source: 'website',
          link,
          lat: 45,
          lng: 3,
          sports_attributes: [{ sport: 121 }],
        },
      },
    });
  for (const link of SCRIPT_URLS) {
    const res = await partner(link);
    t.is(res.status, 422, link);
    t.deepEqual(paths(res), ['body.partner.link'], link);
  }
  t.is((await partner('https://club.example/join')).status, 201);
});

test("another user's pending external_place_id is neither disclosed (no 409 oracle) nor blocking", async (t) => {
  const ext = `ext-hidden-${Math.random().toString(36).slice(2)}`;
  const hidden = (
    await call(api, 'POST', '/places', { token: author.token, body: placeBody({ external_place_id: ext }) })
  ).body.properties;
  t.is(hidden.status, 'pending');

  const mine = await call(api, 'POST', '/places', {
    token: stranger.token,
    body: placeBody({ external_place_id: ext }),
  });
  t.is(mine.status, 201, 'a pending place of someone else does not block the id');
  t.not(mine.body.properties.uuid, hidden.uuid);
  t.false(JSON.stringify(mine.body).includes(hidden.uuid));
  // Variant A finds the caller's own place, never the hidden one.
  const a = await call(api, 'POST', '/places', {
    token: stranger.token,
    body: { external_place_id: ext, activities: [{ sport_id: 121 }] },
  });
  t.is(a.status, 200);
  t.is(a.body.properties.uuid, mine.body.properties.uuid);
  // A duplicate of one's own pending place is a conflict naming it (the caller sees it).
  const again = await call(api, 'POST', '/places', {
    token: author.token,
    body: placeBody({ external_place_id: ext }),
  });
  t.is(again.status, 409);
  t.deepEqual(paths(again), ['body.external_place_id']);
  t.regex(again.body.errors[0].message, new RegExp(hidden.uuid));
  t.false(JSON.stringify(again.body).includes(mine.body.properties.uuid));
});

test('squatting: a pending external_place_id does not block staff; approving the duplicate is a 409 for staff', async (t) => {
  const ext = `ext-squat-${Math.random().toString(36).slice(2)}`;
  const squat = (
    await call(api, 'POST', '/places', { token: stranger.token, body: placeBody({ external_place_id: ext }) })
  ).body.properties;
  const real = await call(api, 'POST', '/places', { token: staff.token, body: placeBody({ external_place_id: ext }) });
  t.is(real.status, 201);
  t.is(real.body.properties.status, 'approved');
  const uuid = real.body.properties.uuid;

  const approving = await approve(squat.uuid);
  t.is(approving.status, 409);
  t.deepEqual(paths(approving), ['properties.external_place_id']);
  t.regex(approving.body.errors[0].message, new RegExp(uuid));
  t.is((await get(squat.uuid, staff.token)).body.properties.status, 'pending');

  // The approved place is public: a conflict with it may name it (and variant A reaches it).
  const dup = await call(api, 'POST', '/places', { token: author.token, body: placeBody({ external_place_id: ext }) });
  t.is(dup.status, 409);
  t.regex(dup.body.errors[0].message, new RegExp(uuid));
  const a = await call(api, 'POST', '/places', {
    token: stranger.token,
    body: { external_place_id: ext, activities: [{ sport_id: 121 }] },
  });
  t.is(a.body.properties.uuid, uuid, 'variant A prefers the approved place');
  t.is((await reject(squat.uuid)).body.properties.status, 'rejected');
});
