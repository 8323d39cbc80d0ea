import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { DATATYPE } from '../shared/tracking/activities/data.ts';
import { exportGpx } from '../shared/tracking/formats/gpx-export.ts';
import type { ImportErrorCode } from '../shared/tracking/formats/import-error.ts';
import { importActivityFile } from '../shared/tracking/formats/import-file.ts';
import {
  assertRoundTrip,
  channel,
  FIXTURES,
  fixture,
  refusal,
  schemaValidator,
  summary,
} from './helpers/activity-files.ts';

let tmp: string;
test.before(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'tracking-formats-'));
});
test.after.always(() => rm(tmp, { recursive: true, force: true }));
const assertValid = schemaValidator(() => tmp);

// ---------------------------------------------------------------- every real device file

/** What each real file gives: imported (with a few checked facts) or refused (and why). */
const DEVICE_FILES: Record<
  string,
  | { refused: ImportErrorCode; because: RegExp }
  | { start: string; duration: number; trackPoints: number; sportId: number; channels: number[] }
> = {
  'gpx/Mojstrovka.gpx': { refused: 'no-activity', because: /184 points all carry the same time \(1901-12-13T20:45:52/ },
  'gpx/route.gpx': {
    refused: 'no-activity',
    because: /no point with a <time> \(0 track point\(s\), 55 route point\(s\)/,
  },
  'gpx/cerknicko-jezero.gpx': {
    start: '2010-08-05T14:23:59.000Z',
    duration: 7190,
    trackPoints: 296,
    sportId: 402,
    channels: [5, 14],
  },
  'gpx/korita-zbevnica.gpx': {
    start: '2010-10-03T09:36:30.000Z',
    duration: 13381,
    trackPoints: 513,
    sportId: 402,
    channels: [5, 14],
  },
  'gpx/gpx1.1_with_all_fields.gpx': {
    start: '2013-01-01T12:00:04.000Z',
    duration: 0,
    trackPoints: 1,
    sportId: 402,
    channels: [14],
  },
  'gpx/gpx_with_garmin_extension.gpx': {
    start: '2016-06-17T23:41:03.000Z',
    duration: 0,
    trackPoints: 1,
    sportId: 402,
    channels: [1, 14],
  },
  'gpx/track-with-empty-segment.gpx': {
    start: '2013-07-06T17:26:26.000Z',
    duration: 76,
    trackPoints: 9,
    sportId: 402,
    channels: [5, 14],
  },
  'gpx/unicode_with_bom.gpx': {
    start: '2016-05-27T10:08:48.000Z',
    duration: 0,
    trackPoints: 1,
    sportId: 402,
    channels: [14],
  },
  'tcx/2x2km.tcx': {
    start: '2024-12-13T07:14:03.000Z',
    duration: 3385,
    trackPoints: 1248,
    sportId: 402,
    channels: [5, 10, 20, 178],
  },
  'tcx/3x250m.tcx': {
    start: '2016-07-28T09:35:29.000Z',
    duration: 487,
    trackPoints: 94,
    sportId: 402,
    channels: [1, 5, 10, 20, 178],
  },
  'tcx/strava_export.tcx': {
    start: '2024-11-29T07:18:43.000Z',
    duration: 3605,
    trackPoints: 1239,
    sportId: 402,
    channels: [5, 10, 20, 178],
  },
  'fit/3x250m.fit': {
    start: '2016-07-28T09:35:28.000Z',
    duration: 488,
    trackPoints: 94,
    sportId: 402,
    channels: [1, 5, 6, 10, 20],
  },
  'fit/cottwich.fit': {
    start: '2022-09-18T12:48:35.000Z',
    duration: 1655,
    trackPoints: 712,
    sportId: 263,
    channels: [5, 6, 10, 20, 178],
  },
  'fit/davidfit.fit': {
    start: '2017-10-23T18:34:50.000Z',
    duration: 4609,
    trackPoints: 4609,
    sportId: 401,
    channels: [1, 5, 6, 14, 20, 100, 178],
  },
  'fit/workout.fit': {
    start: '2024-12-12T18:36:07.000Z',
    duration: 3349,
    trackPoints: 0,
    sportId: 263,
    channels: [10, 20, 178],
  },
};

test('every real device file is listed here, so none escapes the checks below', async (t) => {
  const files = (
    await Promise.all(
      ['gpx', 'tcx', 'fit'].map(async (dir) =>
        (await readdir(path.join(FIXTURES, 'devices', dir))).map((f) => `${dir}/${f}`),
      ),
    )
  ).flat();
  t.deepEqual(files.sort(), Object.keys(DEVICE_FILES).sort());
});

for (const [file, expected] of Object.entries(DEVICE_FILES)) {
  test(`device file ${file}: ${'refused' in expected ? `refused (${expected.refused})` : 'imports, exports valid GPX and TCX, round-trips'}`, async (t) => {
    const bytes = await fixture(`devices/${file}`);
    if ('refused' in expected) {
      const err = refusal(() => importActivityFile(bytes));
      t.is(err.code, expected.refused);
      t.regex(err.message, expected.because);
      t.deepEqual(err.errors, [{ path: 'body', message: err.message }]);
      return;
    }
    const imported = importActivityFile(bytes);
    const { content } = imported;
    t.is(content.startdate.toISOString(), expected.start);
    t.is(content.duration, expected.duration);
    t.is(content.track.elapsed.length, expected.trackPoints);
    t.is(content.sportId, expected.sportId);
    t.deepEqual(
      [...content.datastream.channels.keys()].sort((a, b) => a - b),
      expected.channels,
    );
    t.is(content.summaries.get(DATATYPE.DURATION), expected.duration);
    for (let i = 1; i < content.datastream.elapsed.length; i++) {
      if ((content.datastream.elapsed[i] as number) <= (content.datastream.elapsed[i - 1] as number))
        t.fail('elapsed not ascending');
    }
    const tcx = assertRoundTrip(t, 'tcx', content);
    await assertValid(t, 'tcx', tcx);
    const gpx = exportGpx(content);
    await assertValid(t, 'gpx', gpx);
    if (content.track.elapsed.length) assertRoundTrip(t, 'gpx', content);
  });
}

test('real files: what their streams give becomes the summaries, implausible values are dropped and said', async (t) => {
  const rowing = importActivityFile(await fixture('devices/tcx/3x250m.tcx'));
  t.like(summary(rowing), { 5: 750.29, 3: 184, 24: 487, 23: 1 });
  t.is(channel(rowing, DATATYPE.LAP)?.filter((v) => v === 1).length, 1);

  // HR straps writing 1 bpm: the heart rate is dropped, with a warning.
  const strava = importActivityFile(await fixture('devices/tcx/strava_export.tcx'));
  t.false(strava.content.datastream.channels.has(DATATYPE.HR_CURRENT));
  t.deepEqual(strava.warnings, ['1239 heartRate value(s) outside 20..250 bpm were ignored']);

  // Distances and speeds in the wrong unit (1,205 km rowed in 56 minutes): dropped, said.
  const workout = importActivityFile(await fixture('devices/fit/workout.fit'));
  t.false(workout.content.datastream.channels.has(DATATYPE.DISTANCE));
  t.false(workout.content.summaries.has(DATATYPE.DISTANCE));
  t.is(workout.warnings.length, 3);
  t.regex(workout.warnings.join('\n'), /distances grow by 1295 km\/h on average/);

  // FIT laps: 3 lap messages, 3 markers; the session's calories; Zwift: virtual ride -> home trainer, RPM.
  const fit = importActivityFile(await fixture('devices/fit/3x250m.fit'));
  t.is(channel(fit, DATATYPE.LAP)?.filter((v) => v === 1).length, 3);
  const zwift = importActivityFile(await fixture('devices/fit/davidfit.fit'));
  t.is(zwift.sportSource, 'file');
  t.like(summary(zwift), { 23: 1098, 3: 163, 179: 551 });
  t.true(zwift.content.datastream.channels.has(DATATYPE.RPM_CURRENT));

  // GPX 1.0 logs: untimed points skipped and counted; several tracks; waypoints ignored.
  const korita = importActivityFile(await fixture('devices/gpx/korita-zbevnica.gpx'));
  t.deepEqual(korita.warnings, ['358 point(s) without a time were skipped']);
  t.is(korita.content.name, '03-OCT-10');
  const garmin = importActivityFile(await fixture('devices/gpx/gpx_with_garmin_extension.gpx'));
  t.deepEqual(channel(garmin, DATATYPE.HR_CURRENT), [171]);
  t.deepEqual(garmin.warnings, ['the file has no timed track point: its waypoints were used']);
});
