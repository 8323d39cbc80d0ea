import test from 'ava';
import {
  formatDuration,
  formatPace,
  formatSummaryValue,
  SHARE_PAGE_CSP,
  sharePageHtml,
} from '../api/tracking/share-page.ts';
import { type ActivityContent, emptyDatastream, emptyTrack } from '../shared/tracking/activities/data.ts';
import { downsample, MAX_CHART_POINTS, paceOf, shareCharts } from '../shared/tracking/shares/charts.ts';

test('the Content-Security-Policy names no origin: only hashed inline scripts and style', (t) => {
  t.notRegex(SHARE_PAGE_CSP, /https?:|\*|data:|'unsafe-inline'|'unsafe-eval'/);
  t.notRegex(SHARE_PAGE_CSP.replace("frame-ancestors 'self'", ''), /'self'/);
  t.regex(SHARE_PAGE_CSP, /default-src 'none'/);
  t.regex(SHARE_PAGE_CSP, /script-src 'sha256-[A-Za-z0-9+/=]+' 'sha256-[A-Za-z0-9+/=]+'/);
  t.regex(SHARE_PAGE_CSP, /style-src 'sha256-[A-Za-z0-9+/=]+'/);
  // The same policy is in the page, so it holds when an app relays the page without our headers.
  const html = sharePageHtml({
    name: null,
    sportName: 'Running',
    sportFamily: 'fitness',
    pace: false,
    startdate: new Date('2024-05-01T06:30:00Z'),
    duration: 60,
    summary: [],
    content: {
      sportId: 121,
      name: null,
      startdate: new Date(),
      duration: 60,
      summaries: new Map(),
      datastream: emptyDatastream(),
      track: emptyTrack(),
    },
  });
  t.regex(html, /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'sha256-/);
  t.regex(html, /<h1>Running activity<\/h1>/, 'an unnamed activity is named after its sport');
  t.regex(html, /aria-label="No GPS track"/, 'no track: the sport family placeholder');
  t.regex(html, /No speed recorded\./);
});

/** A day at 1 Hz with speed and heart rate in the datastream and a moving track. */
function dayLong(withSpeed: boolean): ActivityContent {
  const n = 86_400;
  const elapsed = Int32Array.from({ length: n }, (_, i) => i);
  const hr = Float64Array.from({ length: n }, (_, i) => (i % 600 === 0 ? Number.NaN : 120 + (i % 40)));
  const speed = Float64Array.from({ length: n }, () => 10_000);
  return {
    sportId: 121,
    name: 'day',
    startdate: new Date(),
    duration: n,
    summaries: new Map(),
    datastream: {
      elapsed,
      channels: new Map(
        withSpeed
          ? [
              [1, hr],
              [6, speed],
            ]
          : [[1, hr]],
      ),
    },
    track: {
      elapsed,
      latitude: Float64Array.from({ length: n }, (_, i) => 45 + i * 0.00001),
      longitude: new Float64Array(n).fill(5),
      elevation: Float64Array.from({ length: n }, (_, i) => (i < 10 ? Number.NaN : 200 + i / 1000)),
    },
  };
}

test('charts: at most MAX_CHART_POINTS points each; speed in km/h from the datastream, else from the track', (t) => {
  const charts = shareCharts(dayLong(true));
  for (const key of ['speed', 'heartRate', 'elevation'] as const) {
    const series = charts[key];
    t.truthy(series, key);
    t.true((series?.elapsed.length ?? 0) <= MAX_CHART_POINTS, key);
    t.is(series?.elapsed.length, series?.values.length);
    const e = series?.elapsed ?? [];
    t.true(
      e.every((v, i) => i === 0 || v > (e[i - 1] as number)),
      `${key} time ascending`,
    );
  }
  t.true(charts.speed?.values.every((v) => v === 10));
  t.true(charts.heartRate?.values.every((v) => v !== null && v >= 120 && v < 160));

  // Without a speed channel: 0.00001° of latitude a second is 1.11 m/s, 4.0 km/h.
  const fromTrack = shareCharts(dayLong(false)).speed;
  t.truthy(fromTrack);
  t.true(fromTrack?.values.every((v) => v !== null && Math.abs(v - 4.0) < 0.05));

  // Nothing to draw: null charts.
  const empty = shareCharts({ ...dayLong(false), datastream: emptyDatastream(), track: emptyTrack() });
  t.deepEqual(empty, { speed: null, pace: null, heartRate: null, elevation: null });
});

test('pace chart (foot sports): minutes per km from the averaged speed, none while standing', (t) => {
  t.is(shareCharts(dayLong(true)).pace, null, 'only when asked');
  const { pace } = shareCharts(dayLong(true), MAX_CHART_POINTS, { pace: true });
  t.true((pace?.elapsed.length ?? 0) <= MAX_CHART_POINTS);
  t.true(
    pace?.values.every((v) => v === 6),
    '10 km/h is 6 min/km',
  );
  const standing = paceOf({ elapsed: [0, 1, 2], values: [12, 0.5, null] });
  t.deepEqual(standing, { elapsed: [0, 1, 2], values: [5, null, null] });
  t.is(paceOf({ elapsed: [0], values: [0] }), null);
});

test('downsampling keeps short series as they are, breaks the line where a bucket has no value', (t) => {
  t.deepEqual(downsample({ elapsed: [0, 1, 2], values: [1.234, null, 3] }, 10, 1), {
    elapsed: [0, 1, 2],
    values: [1.2, null, 3],
  });
  const gappy = downsample({ elapsed: [0, 1, 2, 3, 4, 5, 6, 7], values: [1, 1, null, null, 3, 3, 5, 5] }, 4, 0);
  t.deepEqual(gappy, { elapsed: [1, 3, 5, 7], values: [1, null, 3, 5] });
  // Buckets without samples are skipped; a bucket's time is the mean of its samples' times.
  const sparse = downsample({ elapsed: [0, 1, 2, 3, 10, 11, 12, 13], values: [1, 1, 1, 1, 3, 3, 5, 5] }, 4, 1);
  t.deepEqual(sparse, { elapsed: [2, 10, 12], values: [1, 3, 4.3] });
});

test('summary values read as a person reads them, with the units of the referential', (t) => {
  const line = (datatypeId: number, unit: string, value: number) => ({ datatypeId, unit, value, label: '' });
  t.is(formatSummaryValue(line(5, 'm', 21_345)), '21.35 km');
  t.is(formatSummaryValue(line(18, 'm', 312.4)), '312 m');
  t.is(formatSummaryValue(line(9, 'm/h', 10_672)), '10.7 km/h');
  t.is(formatSummaryValue(line(24, 's', 3725)), '1:02:05');
  t.is(formatSummaryValue(line(4, 'bpm', 141.3)), '141 bpm', 'heart rates in whole beats');
  t.is(formatSummaryValue(line(3, 'bpm', 171.5)), '172 bpm');
  // Foot sports read speeds as a pace: whole seconds, so 359.6 s per km reads 6:00.
  t.is(formatSummaryValue(line(9, 'm/h', 10_012), true), '6:00 /km');
  t.is(formatSummaryValue(line(7, 'm/h', 20_000), true), '3:00 /km');
  t.is(formatPace(4_000), '15:00 /km');
  t.is(formatPace(900), '-', 'standing has no pace');
  t.is(formatPace(1_000), '1:00:00 /km');
  t.is(formatSummaryValue(line(23, 'kcal', 1234)), '1,234 kcal');
  t.is(formatSummaryValue(line(20, 'bool', 1)), 'yes');
  t.is(formatSummaryValue(line(36, 'none', 2)), '2');
  t.is(formatDuration(86_399), '23:59:59');
});
