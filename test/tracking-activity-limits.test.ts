import test from 'ava';
import { ACTIVITY_LIMITS, contentLimitProblems } from '../shared/tracking/activities/content.ts';
import { importActivityFile } from '../shared/tracking/formats/import-file.ts';
import { activityFileUploads, MEDIA } from './helpers/activity-file-uploads.ts';
import { refusal } from './helpers/activity-files.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { activity, type Body, violations } from './helpers/tracking-activities.ts';

/**
 * Issue 33, point 5: what one activity may hold (ACTIVITY_LIMITS, docs/tracking-activities.md),
 * whichever way it is written: each limit is accepted when reached and a 422 naming it one past.
 */

// The files at the limits are larger than IMPORT_ASYNC_ABOVE's default: here they are read in the
// request, as the job reads them (test/tracking-import-jobs.test.ts runs the same use case as a job).
const api = await startTrackingApi({ env: { IMPORT_ASYNC_ABOVE: '64mb' } });
test.after.always(() => api.close());
const { postRaw } = activityFileUploads(api);

const L = ACTIVITY_LIMITS;
const LIMIT_TEXT = {
  samples: /has 172,801 samples; an activity holds at most 172,800 \(ACTIVITY_LIMITS\.maxSamples/,
  points: /has 172,801 points; an activity's track holds at most 172,800 \(ACTIVITY_LIMITS\.maxTrackPoints/,
};

/** `n` samples, one a second, each with a heart rate. */
function datastream(n: number): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (let s = 0; s < n; s++) out[s] = { '1': 120 + (s % 40) };
  return out;
}

/** `n` GPS points, one a second. */
function locations(n: number): Record<string, Body> {
  const out: Record<string, Body> = {};
  for (let s = 0; s < n; s++) out[s] = { latitude: 45 + s * 1e-6, longitude: 6, elevation: 1000 };
  return out;
}

/** A day of its own for each activity: no two are duplicates (same start and duration). */
let day = 0;
const startdate = () => new Date(Date.UTC(2024, 0, 1 + day++, 6)).toISOString();

test('JSON: maxSamples samples are stored, one more is a 422 on datastream naming the limit', async (t) => {
  const u = await api.user();
  const body = (n: number) => activity(u, { startdate: startdate(), duration: n, datastream: datastream(n) });
  const atLimit = await api.call('POST', '/activities', u, { body: body(L.maxSamples) });
  t.is(atLimit.status, 201, JSON.stringify(atLimit.body).slice(0, 500));
  const over = await api.call('POST', '/activities', u, { body: body(L.maxSamples + 1) });
  t.is(over.status, 422);
  t.deepEqual(violations(over.body), ['datastream']);
  t.regex(over.body.violations[0].message, LIMIT_TEXT.samples);
});

test('JSON: maxTrackPoints locations are stored, one more is a 422 on locations naming the limit', async (t) => {
  const u = await api.user();
  const body = (n: number) => activity(u, { startdate: startdate(), duration: n, locations: locations(n) });
  const atLimit = await api.call('POST', '/activities', u, { body: body(L.maxTrackPoints) });
  t.is(atLimit.status, 201, JSON.stringify(atLimit.body).slice(0, 500));
  const over = await api.call('POST', '/activities', u, { body: body(L.maxTrackPoints + 1) });
  t.is(over.status, 422);
  t.deepEqual(violations(over.body), ['locations']);
  t.regex(over.body.violations[0].message, LIMIT_TEXT.points);
});

test('JSON: a span of maxSeconds is stored, one second more is a 422 (duration, or the last sample)', async (t) => {
  const u = await api.user();
  const sparse = { '0': { '1': 100 }, [L.maxSeconds]: { '1': 110 } };
  const atLimit = await api.call('POST', '/activities', u, {
    body: activity(u, { startdate: startdate(), duration: L.maxSeconds, datastream: sparse }),
  });
  t.is(atLimit.status, 201);
  const longer = await api.call('POST', '/activities', u, {
    body: activity(u, { startdate: startdate(), duration: L.maxSeconds + 1 }),
  });
  t.is(longer.status, 422);
  t.deepEqual(violations(longer.body), ['duration']);
  const later = await api.call('POST', '/activities', u, {
    body: activity(u, { startdate: startdate(), duration: 10, datastream: { [L.maxSeconds + 1]: { '1': 100 } } }),
  });
  t.is(later.status, 422);
  t.regex(later.body.violations[0].message, /from 0 to 604800/);
});

test('the store refuses content beyond the limits whoever writes it, each problem on its member', (t) => {
  const content = (samples: number, points: number, duration: number) => ({
    duration,
    datastream: { elapsed: Int32Array.from({ length: samples }, (_, i) => i), channels: new Map() },
    track: {
      elapsed: Int32Array.from({ length: points }, (_, i) => i),
      latitude: new Float64Array(points),
      longitude: new Float64Array(points),
      elevation: new Float64Array(points),
    },
  });
  t.deepEqual(contentLimitProblems(content(L.maxSamples, L.maxTrackPoints, L.maxSeconds)), []);
  const over = contentLimitProblems(content(L.maxSamples + 1, L.maxTrackPoints + 1, L.maxSeconds + 1));
  t.deepEqual(
    over.map((p) => p.path),
    ['body.duration', 'body.datastream', 'body.locations'],
  );
  t.regex(over[0]?.message ?? '', /spans 604,801 s; an activity lasts at most 604,800 s \(ACTIVITY_LIMITS\.maxSeconds/);
  t.regex(over[1]?.message ?? '', LIMIT_TEXT.samples);
  t.regex(over[2]?.message ?? '', LIMIT_TEXT.points);
});

/** A GPX of `seconds` located points, one a second (or the given seconds), from 2024-03-01. */
function gpx(seconds: number[]): Buffer {
  const start = Date.UTC(2024, 2, 1 + day++);
  const points = seconds.map(
    (s) =>
      `<trkpt lat="${(45 + s * 1e-6).toFixed(6)}" lon="6"><time>${new Date(start + s * 1000).toISOString().slice(0, 19)}Z</time></trkpt>`,
  );
  return Buffer.from(
    `<?xml version="1.0"?><gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>${points.join('')}</trkseg></trk></gpx>`,
  );
}
const everySecond = (n: number) => Array.from({ length: n }, (_, i) => i);

test('files: maxSamples seconds of records are imported, one more is a 422 on the file naming the limit', async (t) => {
  const u = await api.user();
  const atLimit = await postRaw(u, gpx(everySecond(L.maxSamples)), MEDIA.gpx);
  t.is(atLimit.status, 201, JSON.stringify(atLimit.body).slice(0, 500));
  const stored = await api.call('GET', `/activities/${(atLimit.body as Body).id}`, u);
  t.is(Object.keys(stored.body.datastream).length, L.maxSamples);
  t.is(Object.keys(stored.body.locations).length, L.maxTrackPoints);

  const over = await postRaw(u, gpx(everySecond(L.maxSamples + 1)), MEDIA.gpx);
  t.is(over.status, 422);
  t.deepEqual(violations(over.body as never), ['']);
  t.regex(
    over.body.violations[0].message,
    /holds 172801 distinct seconds of data; an activity holds at most 172800 samples \(ACTIVITY_LIMITS\.maxSamples/,
  );
});

test('files: a recording of maxSeconds is imported, one second more is a 422 naming the 7 days', async (t) => {
  const u = await api.user();
  const atLimit = await postRaw(u, gpx([0, L.maxSeconds]), MEDIA.gpx);
  t.is(atLimit.status, 201);
  t.is((atLimit.body as Body).duration, L.maxSeconds);
  const over = await postRaw(u, gpx([0, L.maxSeconds + 1]), MEDIA.gpx);
  t.is(over.status, 422);
  t.regex(over.body.violations[0].message, /spans 604801 s, more than the 604800 s \(7 days\)/);
});

test('the importers (GPX, TCX and FIT share one builder) stop at the same limits', (t) => {
  t.is(importActivityFile(gpx(everySecond(L.maxSamples))).content.datastream.elapsed.length, L.maxSamples);
  const over = refusal(() => importActivityFile(gpx(everySecond(L.maxSamples + 1))));
  t.is(over.code, 'over-limit');
  t.is(refusal(() => importActivityFile(gpx([0, L.maxSeconds + 1]))).code, 'over-limit');
});
