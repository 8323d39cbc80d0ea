import test from 'ava';
import { createLogger } from '../shared/observability/logger.ts';
import { validTraceparent } from '../shared/observability/request-context.ts';
import { decodeJobMeta, encodeJobMeta } from '../shared/queue/job-meta.ts';
import { job } from '../shared/queue/jobs.ts';
import { enqueueInTransaction } from '../shared/queue/outbox-write.ts';
import { DATATYPE } from '../shared/tracking/activities/data.ts';
import { startWorkers } from '../workers/worker.ts';
import { testConfig } from './helpers/app.ts';
import { logSink } from './helpers/log-lines.ts';
import { startTrackingApi } from './helpers/tracking.ts';

const api = await startTrackingApi();
const { db } = api.database;
test.after.always(() => api.close());

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

const activity = (ldid: string) => ({
  user: `/v2/users/${ldid}`,
  sport: '/v2/sports/121',
  startdate: '2026-03-01T07:00:00+00:00',
  duration: 300,
  dataSummaries: { [DATATYPE.DISTANCE]: 1200 },
  datastream: Object.fromEntries(Array.from({ length: 301 }, (_, i) => [String(i), { [DATATYPE.DISTANCE]: i * 4 }])),
});

const rowsOf = (activityId: string) =>
  db
    .selectFrom('outbox')
    .select(['queue', 'job_name', 'request_id', 'traceparent'])
    .where('job_id', 'like', `%${activityId}%`)
    .orderBy('queue')
    .execute();

test('traceparent: only valid W3C version-00 headers are kept', (t) => {
  t.is(validTraceparent(TRACEPARENT), TRACEPARENT);
  t.is(validTraceparent(undefined), undefined);
  t.is(validTraceparent('garbage'), undefined);
  t.is(validTraceparent('00-00000000000000000000000000000000-00f067aa0ba902b7-01'), undefined);
  t.is(validTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01'), undefined);
  t.is(validTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'), undefined);
});

test('job meta: what the relay writes the worker reads; nothing for rows outside a request', (t) => {
  t.is(encodeJobMeta(null, null), undefined);
  t.deepEqual(decodeJobMeta(encodeJobMeta('r-1', TRACEPARENT)), { requestId: 'r-1', traceparent: TRACEPARENT });
  t.deepEqual(decodeJobMeta(encodeJobMeta('r-1', null)), { requestId: 'r-1' });
  t.is(decodeJobMeta(undefined), undefined);
  t.is(decodeJobMeta('not json'), undefined);
  t.deepEqual(decodeJobMeta('{"requestId":"r-2","traceparent":"bad"}'), { requestId: 'r-2' });
});

test('a POST stores its request id and the client traceparent on its outbox rows', async (t) => {
  const u = await api.user();
  const posted = await api.call('POST', '/activities', u, {
    body: activity(u.ldid),
    headers: { 'x-request-id': 'req-follow-1', traceparent: TRACEPARENT },
  });
  t.is(posted.status, 201, JSON.stringify(posted.body));
  const rows = await rowsOf((posted.body as { id: string }).id);
  t.deepEqual(
    rows.map((r) => [r.queue, r.request_id, r.traceparent]),
    [
      ['records', 'req-follow-1', TRACEPARENT],
      ['thumbnails', 'req-follow-1', TRACEPARENT],
    ],
  );

  // No id sent: the one the API made (and answered) is stored; an invalid traceparent is not,
  // a new trace is started instead (one for all the rows).
  const other = await api.call('POST', '/activities', u, {
    body: { ...activity(u.ldid), startdate: '2026-03-02T07:00:00+00:00' },
    headers: { traceparent: '00-not-a-trace-01' },
  });
  t.is(other.status, 201);
  const generated = other.headers.get('x-request-id');
  t.truthy(generated);
  const otherRows = await rowsOf((other.body as { id: string }).id);
  t.true(otherRows.length > 0);
  const started = otherRows[0]?.traceparent;
  t.regex(started ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  t.true(otherRows.every((r) => r.request_id === generated && r.traceparent === started));
});

test('outside a request (CLIs, schedulers) the columns are null', async (t) => {
  const requestedBy = `test-${Date.now()}`;
  await enqueueInTransaction(db, job('recommendations', 'compute-all', { requestedBy }));
  const row = await db
    .selectFrom('outbox')
    .select(['request_id', 'traceparent'])
    .where('job_id', '=', `recs-${requestedBy}`)
    .executeTakeFirstOrThrow();
  t.deepEqual(row, { request_id: null, traceparent: null });
});

test.serial(
  "the worker's lines for the jobs of a POST (records, thumbnail, export) carry its request id",
  async (t) => {
    const { stream: sink, lines } = logSink();
    const workers = await startWorkers(
      testConfig({
        DATABASE_URL: api.database.url,
        QUEUE_PREFIX: api.config.QUEUE_PREFIX,
        STORAGE_DIR: api.config.STORAGE_DIR,
        WORKER_QUEUES: 'records,thumbnails,exports',
        OUTBOX_POLL_MS: '20',
      }),
      // debug: the thumbnail handler's own line too.
      { logger: createLogger('debug', 'worker', sink) },
    );
    t.teardown(() => workers.close());
    const u = await api.user();
    const posted = await api.call('POST', '/activities', u, {
      body: activity(u.ldid),
      headers: { 'x-request-id': 'req-follow-2', traceparent: TRACEPARENT },
    });
    t.is(posted.status, 201);
    const exported = await api.call('POST', '/exports', u, { headers: { 'x-request-id': 'req-follow-2' } });
    t.is(exported.status, 201, JSON.stringify(exported.body));
    const ours = () => lines.filter((l) => l.reqId === 'req-follow-2');
    const end = Date.now() + 120_000;
    while (ours().filter((l) => l.msg === 'job done').length < 3 && Date.now() < end)
      await new Promise((r) => setTimeout(r, 25));
    const done = ours().filter((l) => l.msg === 'job done');
    t.deepEqual(
      done.map((l) => `${l.queue}/${l.job}`).sort(),
      ['exports/user-export', 'records/activity-changed', 'thumbnails/activity-track-thumbnail'],
      JSON.stringify(lines),
    );
    // The handler's own line (the track thumbnail's) carries it too.
    t.true(
      ours().some((l) => l.msg === 'track thumbnail'),
      JSON.stringify(lines),
    );
  },
);
