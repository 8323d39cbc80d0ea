import test from 'ava';
import { UnrecoverableError } from 'bullmq';
import { createLogger } from '../shared/observability/logger.ts';
import { requestContext } from '../shared/observability/request-context.ts';
import { DATATYPE } from '../shared/tracking/activities/data.ts';
import { PROCESSORS } from '../workers/processors/index.ts';
import { startWorkers } from '../workers/worker.ts';
import { testConfig } from './helpers/app.ts';
import { waitFor } from './helpers/failing-jobs.ts';
import { type LogLine, logSink } from './helpers/log-lines.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { activity } from './helpers/tracking-activities.ts';

// One sink for the API and the worker, as one log store would gather both (OpenTelemetry off
// here; test/otel.test.ts checks the lines with it on).
const sink = logSink();
// The track thumbnail of this request's activity fails, for its `job failed` line.
const FAILING = 'req-log-trace-3';
const trackThumbnail = PROCESSORS.thumbnails['activity-track-thumbnail'];
const api = await startTrackingApi({ logger: createLogger('debug', 'api', sink.stream) });
const workers = await startWorkers(
  testConfig({
    DATABASE_URL: api.database.url,
    QUEUE_PREFIX: api.config.QUEUE_PREFIX,
    STORAGE_DIR: api.config.STORAGE_DIR,
    WORKER_QUEUES: 'records,thumbnails',
    OUTBOX_POLL_MS: '20',
  }),
  {
    // debug: the thumbnail handler's own line too.
    logger: createLogger('debug', 'worker', sink.stream),
    processors: {
      records: PROCESSORS.records,
      thumbnails: {
        ...PROCESSORS.thumbnails,
        'activity-track-thumbnail': (job, deps) =>
          requestContext()?.requestId === FAILING
            ? Promise.reject(new UnrecoverableError('failing on purpose'))
            : trackThumbnail(job, deps),
      },
    },
  },
);
test.after.always(async () => {
  await workers.close();
  await api.close();
});

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

/**
 * A POST of an activity with a track (so a thumbnail job too), then every line of it and its jobs
 * once the `awaited` lines (message: how many) have been written.
 */
async function postAndFollow(
  requestId: string,
  headers: Record<string, string>,
  startdate: string,
  awaited: Record<string, number> = { 'job done': 2, 'track thumbnail': 1 },
) {
  const u = await api.user();
  const posted = await api.call('POST', '/activities', u, {
    body: activity(u, {
      startdate,
      duration: 300,
      dataSummaries: { [DATATYPE.DISTANCE]: 1200 },
      datastream: Object.fromEntries(
        Array.from({ length: 301 }, (_, i) => [String(i), { [DATATYPE.DISTANCE]: i * 4 }]),
      ),
    }),
    headers: { 'x-request-id': requestId, ...headers },
  });
  const ours = () => sink.lines.filter((l) => l.reqId === requestId);
  const written = () => Object.entries(awaited).every(([msg, n]) => ours().filter((l) => l.msg === msg).length >= n);
  const done = await waitFor(async () => written(), 20_000);
  return { posted, done, lines: ours() };
}

const names = (lines: LogLine[]) => lines.map((l) => `${l.name}: ${l.msg}`).sort();

test('every line of a request with a traceparent and of its jobs carries its trace id', async (t) => {
  const { posted, done, lines } = await postAndFollow(
    'req-log-trace-1',
    { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` },
    '2026-03-01T07:00:00+00:00',
  );
  t.is(posted.status, 201, JSON.stringify(posted.body));
  t.true(done, JSON.stringify(sink.lines));
  t.deepEqual(
    names(lines),
    ['api: request', 'worker: job done', 'worker: job done', 'worker: track thumbnail'],
    JSON.stringify(lines),
  );
  for (const line of lines) {
    t.is(line.traceId, TRACE_ID, JSON.stringify(line));
    // No span of ours without OpenTelemetry: the client's parent id is not one.
    t.false('spanId' in line, JSON.stringify(line));
  }
  // The lines keep their fields.
  const request = lines.find((l) => l.msg === 'request');
  t.like(request, { res: { statusCode: 201 }, req: { method: 'POST' } });
  t.is(typeof request?.ms, 'number');
  t.deepEqual(
    lines
      .filter((l) => l.msg === 'job done')
      .map((l) => `${l.queue}/${l.job}`)
      .sort(),
    ['records/activity-changed', 'thumbnails/activity-track-thumbnail'],
  );
});

test('a request without a valid traceparent starts a trace its jobs continue', async (t) => {
  const { posted, done, lines } = await postAndFollow(
    'req-log-trace-2',
    { traceparent: '00-not-a-trace-01' },
    '2026-03-02T07:00:00+00:00',
  );
  t.is(posted.status, 201, JSON.stringify(posted.body));
  t.true(done, JSON.stringify(sink.lines));
  t.is(lines.length, 4, JSON.stringify(lines));
  const traceId = lines[0]?.traceId;
  t.regex(String(traceId), /^[0-9a-f]{32}$/);
  t.not(traceId, TRACE_ID);
  t.true(
    lines.every((l) => l.traceId === traceId),
    JSON.stringify(lines),
  );
});

test("a failed job's line carries its request's trace id", async (t) => {
  const { posted, done, lines } = await postAndFollow(
    FAILING,
    { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` },
    '2026-03-03T07:00:00+00:00',
    { 'job done': 1, 'job failed': 1 },
  );
  t.is(posted.status, 201, JSON.stringify(posted.body));
  t.true(done, JSON.stringify(sink.lines));
  t.deepEqual(names(lines), ['api: request', 'worker: job done', 'worker: job failed'], JSON.stringify(lines));
  t.true(
    lines.every((l) => l.traceId === TRACE_ID),
    JSON.stringify(lines),
  );
});

test('lines outside any request or job carry no trace id', (t) => {
  const started = sink.lines.find((l) => l.msg === 'workers started');
  t.truthy(started);
  t.false('traceId' in (started ?? {}));
});
