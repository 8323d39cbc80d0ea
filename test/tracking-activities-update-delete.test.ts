import test from 'ava';
import { sql } from 'kysely';
import { startTrackingApi } from './helpers/tracking.ts';
import { activity, activityCalls, type Body, HIKING, RUNNING, violations } from './helpers/tracking-activities.ts';

const api = await startTrackingApi();
test.after.always(() => api.close());

const { db } = api.database;
const { post, created, outboxOf } = activityCalls(api);

test('POST writes one records/activity-changed outbox row with the activity; a refused POST writes none', async (t) => {
  const u = await api.user();
  const a = await created(u, { sport: `/v2/sports/${HIKING}` });
  t.deepEqual(await outboxOf(a.id), [
    {
      queue: 'records',
      job_name: 'activity-changed',
      job_id: `records-${a.id}-v1`,
      payload: {
        activityId: a.id,
        userId: u.ldid,
        sportId: HIKING,
        version: 1,
        change: 'created',
        previousSportId: null,
      },
    },
  ]);
  const jobsOfUser = () =>
    db.selectFrom('outbox').select('job_id').where(sql<string>`payload->>'userId'`, '=', u.ldid).execute();
  const before = await jobsOfUser();
  t.is((await post(u, activity(u, { sport: '/v2/sports/999999' }))).status, 422);
  t.is((await post(u, activity(u, { datastream: { '1': { '999999': 1 } } }))).status, 422);
  t.deepEqual(await jobsOfUser(), before);
});

test('PUT changes name, comment, tags, images, thumbnail and sport; bumps the version; the outbox row names the previous sport', async (t) => {
  const u = await api.user();
  const a = await created(u, { datastream: { '0': { '1': 90 } } });
  const res = await api.call('PUT', `/activities/${a.id}`, u, {
    body: {
      name: 'Evening hike',
      comment: 'windy',
      tags: ['hills'],
      images: ['https://cdn.example.com/a.jpg'],
      thumbnail: 'https://cdn.example.com/t.png',
      sport: `/v2/sports/${HIKING}`,
    },
  });
  t.is(res.status, 200, JSON.stringify(res.body));
  t.like(res.body, {
    '@type': 'Activity',
    id: a.id,
    name: 'Evening hike',
    comment: 'windy',
    tags: ['hills'],
    images: ['https://cdn.example.com/a.jpg'],
    thumbnail: 'https://cdn.example.com/t.png',
    sport: `/v2/sports/${HIKING}`,
    // Derived fields and the streams stay.
    availableDatatypes: [1, 5, 24],
    datastreamFlag: true,
  });
  t.is(res.body.datastream, undefined);
  t.true(res.body.updatedAt >= String(a.updatedAt));
  const row = await db.selectFrom('activities').select('version').where('id', '=', a.id).executeTakeFirstOrThrow();
  t.is(row.version, 2);
  const jobs = await outboxOf(a.id);
  t.is(jobs.length, 2);
  t.like(jobs[1], {
    job_id: `records-${a.id}-v2`,
    payload: { change: 'updated', version: 2, sportId: HIKING, previousSportId: RUNNING },
  });

  // Only the fields sent change; null clears; the same sport is no previous sport.
  const second = await api.call('PUT', `/activities/${a.id}`, u, { body: { comment: null, tags: null } });
  t.like(second.body, { name: 'Evening hike', comment: null, tags: null, sport: `/v2/sports/${HIKING}` });
  t.like((await outboxOf(a.id))[2], { payload: { change: 'updated', version: 3, previousSportId: null } });
  const got = await api.call('GET', `/activities/${a.id}`, u);
  t.deepEqual(got.body.datastream, { '0': { '1': 90 } });
});

test('PUT that changes nothing writes nothing; fields fixed at creation are ignored; unknown members and bad values are 422', async (t) => {
  const u = await api.user();
  const a = await created(u);
  const before = await db.selectFrom('activities').select('version').where('id', '=', a.id).executeTakeFirstOrThrow();
  const same = await api.call('PUT', `/activities/${a.id}`, u, { body: { name: 'Morning run', duration: 999 } });
  t.is(same.status, 200);
  t.is(same.body.duration, 3);
  const after = await db.selectFrom('activities').select('version').where('id', '=', a.id).executeTakeFirstOrThrow();
  t.is(after.version, before.version);
  t.is((await outboxOf(a.id)).length, 1);
  // Sending back what a GET answered is accepted (its fixed and read-only members are ignored).
  const read = (await api.call('GET', `/activities/${a.id}`, u)).body;
  const echoed = await api.call('PUT', `/activities/${a.id}`, u, { body: { ...read, name: 'Renamed' } });
  t.is(echoed.status, 200, JSON.stringify(echoed.body));
  t.like(echoed.body, { name: 'Renamed', duration: 3 });

  const cases: [Body, string][] = [
    [{ sport: '/v2/sports/999999' }, 'sport'],
    [{ sport: 'running' }, 'sport'],
    [{ images: ['nope'] }, 'images[0]'],
    [{ thumbnail: 'nope' }, 'thumbnail'],
    [{ name: 5 }, 'name'],
    [{ nmae: 'typo' }, 'nmae'],
  ];
  for (const [body, path] of cases) {
    const res = await api.call('PUT', `/activities/${a.id}`, u, { body });
    t.is(res.status, 422, JSON.stringify(body));
    t.deepEqual(violations(res.body), [path], JSON.stringify(body));
  }
  t.is((await outboxOf(a.id)).length, 2);
});

test('DELETE removes the activity with its streams: 204, then 404; the outbox row has the next version', async (t) => {
  const u = await api.user();
  const a = await created(u, {
    datastream: { '0': { '1': 90 } },
    locations: { '0': { latitude: 1, longitude: 2 } },
  });
  const res = await api.call('DELETE', `/activities/${a.id}`, u);
  t.is(res.status, 204);
  t.is((await api.call('GET', `/activities/${a.id}`, u)).status, 404);
  t.is((await api.call('DELETE', `/activities/${a.id}`, u)).status, 404);
  for (const table of ['activity_tracks', 'activity_datastreams', 'activity_stream_channels'] as const) {
    const rows = await db.selectFrom(table).select('activity_id').where('activity_id', '=', a.id).execute();
    t.deepEqual(rows, [], table);
  }
  const jobs = await outboxOf(a.id);
  t.like(jobs[1], {
    job_id: `records-${a.id}-v2`,
    payload: { change: 'deleted', version: 2, sportId: RUNNING, userId: u.ldid, previousSportId: null },
  });
});
