import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Encoder, type Mesg, Profile } from '@garmin/fitsdk';
import test from 'ava';
import fc from 'fast-check';
import { type ActivityContent, DATATYPE } from '../shared/tracking/activities/data.ts';
import { exportGpx, gpxChunks } from '../shared/tracking/formats/gpx-export.ts';
import { ImportError, type ImportErrorCode } from '../shared/tracking/formats/import-error.ts';
import { detectFormat, importActivityFile, isActivityFileMediaType } from '../shared/tracking/formats/import-file.ts';
import type { ImportedActivity } from '../shared/tracking/formats/import-options.ts';
import { IMPORT_LIMITS } from '../shared/tracking/formats/limits.ts';
import { exportTcx, splitTotal } from '../shared/tracking/formats/tcx-export.ts';
import { CHUNK_CHARS } from '../shared/tracking/formats/xml-output.ts';

const FIXTURES = fileURLToPath(new URL('./fixtures/tracking/', import.meta.url));
const fixture = (name: string) => readFile(path.join(FIXTURES, name));
const SCHEMAS = {
  gpx: path.join(FIXTURES, 'schemas/gpx-1.1.xsd'),
  tcx: path.join(FIXTURES, 'schemas/TrainingCenterDatabasev2.xsd'),
};
const run = promisify(execFile);

let tmp: string;
test.before(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'tracking-formats-'));
});
test.after.always(() => rm(tmp, { recursive: true, force: true }));

let written = 0;
/** Validates a document against its official schema with xmllint; the error names the line. */
async function assertValid(t: { pass: (m?: string) => void }, format: 'gpx' | 'tcx', document: string) {
  const file = path.join(tmp, `${written++}.${format}`);
  await writeFile(file, document);
  try {
    await run('xmllint', ['--noout', '--schema', SCHEMAS[format], file]);
  } catch (err) {
    throw new Error(`${format} export does not validate: ${(err as { stderr?: string }).stderr}`);
  }
  t.pass();
}

/** Export, re-import, export again: the two documents must be identical. */
function assertRoundTrip(
  t: { is: (a: unknown, b: unknown, m?: string) => void },
  format: 'gpx' | 'tcx',
  content: ActivityContent,
) {
  const exporter = format === 'gpx' ? exportGpx : exportTcx;
  const first = exporter(content);
  const again = exporter(importActivityFile(Buffer.from(first)).content);
  t.is(again, first, `${format} export -> import -> export changed the document`);
  return first;
}

function refusal(fn: () => unknown): ImportError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ImportError) return err;
    throw err;
  }
  throw new Error('the file was imported, a refusal was expected');
}

const channel = (a: ImportedActivity, datatype: number) => {
  const values = a.content.datastream.channels.get(datatype);
  return values ? Array.from(values, (v) => (Number.isNaN(v) ? null : v)) : undefined;
};
const summary = (a: ImportedActivity) => Object.fromEntries(a.content.summaries);

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

// ---------------------------------------------------------------- files of other apps

test('a Strava-like GPX: prefixes, bare <power>, two tracks and segments, a pause, merged seconds, missing elevation', async (t) => {
  const a = importActivityFile(await fixture('apps/strava-like-run.gpx'), { contentType: 'application/gpx+xml' });
  t.is(a.format, 'gpx');
  t.is(a.content.sportId, 121);
  t.is(a.sportSource, 'file');
  t.is(a.content.name, 'Run & café ☕');
  t.is(a.content.startdate.toISOString(), '2024-05-01T07:00:00.000Z');
  t.deepEqual(Array.from(a.content.datastream.elapsed), [0, 1, 2, 302, 600]);
  t.deepEqual(Array.from(a.content.track.elapsed), [0, 1, 2, 302, 600]);
  // 07:00:01.2 and 07:00:01.4 share second 1: the first value of each field wins.
  t.deepEqual(channel(a, DATATYPE.HR_CURRENT), [120, 122, 124, 130, 140]);
  t.deepEqual(channel(a, DATATYPE.CADENCE_CURRENT), [80, 82, 81, null, null]);
  t.deepEqual(channel(a, DATATYPE.POWER_CURRENT), [250, null, null, null, null]);
  t.deepEqual(channel(a, DATATYPE.ELEVATION_CURRENT), [400, 401, null, 410, 420]);
  t.is(a.content.track.latitude[1], 45.1001);
  t.true(Number.isNaN(a.content.track.elevation[2] as number));
  t.is(a.content.duration, 600);
  t.deepEqual(a.warnings, ['1 point(s) without a time were skipped']);
  const distance = channel(a, DATATYPE.DISTANCE) as number[];
  t.is(distance[0], 0);
  t.true(Math.abs((distance[4] as number) - 222.39) < 0.1, `distance measured along the track: ${distance[4]}`);
  t.like(summary(a), { 24: 600, 3: 140, 4: 127.2, 15: 420, 16: 400, 18: 20, 19: 0, 11: 82, 13: 81, 179: 250 });
});

test('a Garmin Edge GPX: TrackPointExtension v2 speed, RPM for a ride, PowerExtension, no elevation, offsets', async (t) => {
  const a = importActivityFile(await fixture('apps/garmin-ride-tpx2.gpx'));
  t.is(a.content.sportId, 381);
  t.is(a.content.startdate.toISOString(), '2024-06-02T08:00:00.000Z');
  t.deepEqual(channel(a, DATATYPE.RPM_CURRENT), [85, 90, 0]);
  t.false(a.content.datastream.channels.has(DATATYPE.CADENCE_CURRENT));
  t.deepEqual(channel(a, DATATYPE.SPEED_CURRENT), [30600, 34200, 32400]);
  t.deepEqual(channel(a, DATATYPE.POWER_CURRENT), [180, 220, 0]);
  t.false(a.content.datastream.channels.has(DATATYPE.ELEVATION_CURRENT));
  t.true(Array.from(a.content.track.elevation).every(Number.isNaN));
  // RPM average leaves the stop (0) out; power's keeps it.
  t.like(summary(a), { 103: 87.5, 101: 90, 180: 133.33, 7: 34200, 24: 4 });
  t.false(a.content.summaries.has(DATATYPE.ASCENT));
  const gpx = assertRoundTrip(t, 'gpx', a.content);
  t.regex(gpx, /<gpxtpx:cad>90<\/gpxtpx:cad><\/gpxtpx:TrackPointExtension><gpxpx:PowerInWatts>220</);
  t.notRegex(gpx, /<ele>/);
  await assertValid(t, 'gpx', gpx);
});

test('a GPX 1.0 logger file with <speed>, and an ISO-8859-1 GPX', async (t) => {
  const logger = importActivityFile(await fixture('apps/gpx10-logger.gpx'));
  t.is(logger.content.name, 'Logger walk');
  t.is(logger.sportSource, 'fallback');
  t.is(logger.content.sportId, 402);
  t.deepEqual(channel(logger, DATATYPE.SPEED_CURRENT), [5040, 4320, 4680]);
  t.like(summary(logger), { 18: 4, 24: 20 });
  const latin1 = importActivityFile(await fixture('apps/latin1.gpx'), { sportId: 381 });
  t.is(latin1.content.name, 'Sortie à vélo');
  t.is(latin1.content.sportId, 381);
  t.is(latin1.sportSource, 'caller');
});

test('a Garmin Connect-like TCX: prefixed elements, three laps, TPX speed and watts, a time-only trackpoint, lap calories', async (t) => {
  const a = importActivityFile(await fixture('apps/garmin-bike-laps.tcx'));
  t.is(a.format, 'tcx');
  t.is(a.content.sportId, 381);
  t.is(a.content.name, 'Lunch ride');
  t.is(a.content.startdate.toISOString(), '2024-07-01T07:00:00.000Z');
  t.deepEqual(Array.from(a.content.datastream.elapsed), [0, 3, 5, 6, 66, 68, 70]);
  t.deepEqual(Array.from(a.content.track.elapsed), [0, 3, 5, 66, 68, 70]);
  t.deepEqual(channel(a, DATATYPE.LAP), [null, 1, null, null, 1, null, 1]);
  t.deepEqual(channel(a, DATATYPE.RPM_CURRENT), [70, 75, 80, null, 0, 85, 90]);
  t.deepEqual(channel(a, DATATYPE.SPEED_CURRENT), [36000, 36000, 36000, null, 0, 36000, 36000]);
  t.deepEqual(channel(a, DATATYPE.POWER_CURRENT), [150, 170, 200, null, 0, 210, 230]);
  t.deepEqual(channel(a, DATATYPE.DISTANCE), [0, 30, 50, null, 70, 90, 110]);
  t.is(a.content.duration, 70);
  t.like(summary(a), { 5: 110, 23: 35, 3: 130, 24: 70, 7: 36000, 18: 5, 19: 13, 15: 505, 16: 492 });

  const tcx = assertRoundTrip(t, 'tcx', a.content);
  await assertValid(t, 'tcx', tcx);
  const laps = [
    ...tcx.matchAll(/<Lap StartTime="([^"]+)"><TotalTimeSeconds>(\d+)<\/TotalTimeSeconds><DistanceMeters>([\d.]+)</g),
  ];
  t.deepEqual(
    laps.map((m) => [m[1], Number(m[2]), Number(m[3])]),
    [
      ['2024-07-01T07:00:00Z', 3, 30],
      ['2024-07-01T07:00:03Z', 63, 40],
      ['2024-07-01T07:01:06Z', 4, 40],
    ],
  );
  const calories = [...tcx.matchAll(/<Calories>(\d+)<\/Calories>/g)].map((m) => Number(m[1]));
  t.deepEqual(calories, [2, 31, 2]);
  t.regex(tcx, /<Activity Sport="Biking">/);
  t.regex(tcx, /<Trackpoint><Time>2024-07-01T07:00:06Z<\/Time><\/Trackpoint>/);
  t.regex(tcx, /<ns3:TPX><ns3:Speed>10<\/ns3:Speed><ns3:Watts>150<\/ns3:Watts><\/ns3:TPX>/);
  t.regex(tcx, /<Notes>Lunch ride<\/Notes>/);
});

test('a laps-only TCX (treadmill) imports as a summary; its export is a valid lap without track', async (t) => {
  const a = importActivityFile(await fixture('apps/treadmill-laps-only.tcx'));
  t.is(a.content.sportId, 121);
  t.is(a.content.datastream.elapsed.length, 0);
  t.is(a.content.track.elapsed.length, 0);
  t.is(a.content.duration, 900);
  t.deepEqual(summary(a), { 24: 900, 5: 2800, 9: 11200, 7: 12960, 4: 145, 3: 165, 23: 200 });
  const tcx = assertRoundTrip(t, 'tcx', a.content);
  await assertValid(t, 'tcx', tcx);
  t.regex(tcx, /<TotalTimeSeconds>900<\/TotalTimeSeconds><DistanceMeters>2800<\/DistanceMeters><Calories>200</);
  await assertValid(t, 'gpx', exportGpx(a.content));
});

/** A FIT activity written with Garmin's SDK: the encoder the decoder is tested against. */
const MESG = Profile.MesgNum as Record<'FILE_ID' | 'RECORD' | 'LAP' | 'SESSION', number>;

function encodeFit(options: { records?: number; sport?: string; subSport?: string; type?: string } = {}): Uint8Array {
  const encoder = new Encoder();
  const write = (mesgNum: number, fields: Record<string, unknown>) => encoder.onMesg(mesgNum, fields as Mesg);
  const t0 = Date.UTC(2024, 4, 1, 8, 0, 0);
  const semicircles = (deg: number) => Math.round(deg * (2 ** 31 / 180));
  write(MESG.FILE_ID, {
    type: options.type ?? 'activity',
    manufacturer: 'development',
    product: 1,
    timeCreated: new Date(t0),
    serialNumber: 1,
  });
  const records = options.records ?? 10;
  for (let i = 0; i < records; i++) {
    write(MESG.RECORD, {
      timestamp: new Date(t0 + i * 1000),
      positionLat: semicircles(45.5),
      positionLong: semicircles(6.1 + i * 1e-4),
      altitude: 400 + i,
      heartRate: 120 + i,
      cadence: 80,
      power: 200 + i,
      distance: i * 8,
      speed: 8,
    });
  }
  write(MESG.LAP, { timestamp: new Date(t0 + 4000), startTime: new Date(t0), totalElapsedTime: 4 });
  write(MESG.LAP, {
    timestamp: new Date(t0 + 9000),
    startTime: new Date(t0 + 4000),
    totalElapsedTime: 5,
  });
  write(MESG.SESSION, {
    timestamp: new Date(t0 + 9000),
    startTime: new Date(t0),
    sport: options.sport ?? 'cycling',
    subSport: options.subSport ?? 'road',
    totalElapsedTime: 9,
    totalTimerTime: 9,
    totalDistance: 72,
    totalCalories: 15,
    avgHeartRate: 124,
    maxHeartRate: 129,
  });
  return encoder.close();
}

test('a FIT file written with the FIT SDK encoder: records, laps, session sport and calories', (t) => {
  const a = importActivityFile(encodeFit(), { contentType: 'application/vnd.ant.fit' });
  t.is(a.format, 'fit');
  t.is(a.content.sportId, 385);
  t.is(a.content.startdate.toISOString(), '2024-05-01T08:00:00.000Z');
  t.deepEqual(channel(a, DATATYPE.LAP), [null, null, null, null, 1, null, null, null, null, 1]);
  t.deepEqual(channel(a, DATATYPE.HR_CURRENT), [120, 121, 122, 123, 124, 125, 126, 127, 128, 129]);
  t.deepEqual(channel(a, DATATYPE.RPM_CURRENT)?.[0], 80);
  t.true(Math.abs((a.content.track.latitude[0] as number) - 45.5) < 1e-6);
  t.like(summary(a), { 5: 72, 23: 15, 24: 9, 3: 129, 4: 124.5, 179: 209, 15: 409, 16: 400, 18: 8 });

  // Without records, the session is the activity (a pool swim or a manual entry from a watch).
  const summaryOnly = importActivityFile(encodeFit({ records: 0, sport: 'swimming', subSport: 'lapSwimming' }));
  t.is(summaryOnly.content.sportId, 274);
  t.is(summaryOnly.content.duration, 9);
  t.like(summary(summaryOnly), { 5: 72, 23: 15, 4: 124, 3: 129 });

  t.is(refusal(() => importActivityFile(encodeFit({ type: 'course' }))).code, 'no-activity');
});

// ---------------------------------------------------------------- format detection

test('the bytes decide the format; the content type is only a hint', async (t) => {
  const gpx = await fixture('apps/gpx10-logger.gpx');
  t.is(detectFormat(gpx, 'application/vnd.ant.fit'), 'gpx');
  t.is(detectFormat(await fixture('apps/treadmill-laps-only.tcx'), 'application/octet-stream'), 'tcx');
  t.is(detectFormat(await fixture('devices/fit/3x250m.fit')), 'fit');
  t.is(detectFormat(await fixture('devices/gpx/unicode_with_bom.gpx')), 'gpx');
  t.is(detectFormat(Buffer.from('\uFEFF<?xml version="1.0" encoding="UTF-16"?><gpx/>', 'utf16le')), 'gpx');
  const html = refusal(() => detectFormat(Buffer.from('<!DOCTYPE html><html><body>hi</body></html>'), 'text/html'));
  t.is(html.code, 'unsupported-format');
  t.is(html.message, 'the body (sent as text/html) is not a GPX, TCX or FIT file (its XML root element is <html>)');
  t.is(refusal(() => importActivityFile(Buffer.from('{"name":"run"}'))).code, 'unsupported-format');
  t.is(refusal(() => importActivityFile(Buffer.alloc(0))).message, 'the body is not a GPX, TCX or FIT file');
  t.true(isActivityFileMediaType('application/gpx+xml; charset=utf-8'));
  t.true(isActivityFileMediaType('application/vnd.ant.fit'));
  t.true(isActivityFileMediaType('application/octet-stream'));
  t.false(isActivityFileMediaType('application/ld+json'));
  t.false(isActivityFileMediaType(undefined));
});

// ---------------------------------------------------------------- hostile and broken files

test('entity expansion (billion laughs) and external entities are refused before parsing', async (t) => {
  const laughs = await fixture('hostile/billion-laughs.gpx');
  const billion = refusal(() => importActivityFile(laughs));
  t.is(billion.code, 'unsafe');
  t.regex(billion.message, /DOCTYPE or ENTITY declaration/);
  const external = await fixture('hostile/external-entity.tcx');
  const xxe = refusal(() => importActivityFile(external));
  t.is(xxe.code, 'unsafe');
  t.notRegex(xxe.message, /root:/);
});

test('FIT: a header announcing 1 GB in a small body, a truncated file and a flipped byte are refused', async (t) => {
  const real = await fixture('devices/fit/3x250m.fit');
  const claim = Buffer.from(real.subarray(0, 200));
  claim.writeUInt32LE(1024 ** 3, 4);
  const huge = refusal(() => importActivityFile(claim));
  t.is(huge.code, 'malformed');
  t.regex(
    huge.message,
    /announces 1073741824 bytes of records but the file holds 186 bytes after its header: it is truncated/,
  );

  const truncated = refusal(() => importActivityFile(real.subarray(0, real.length - 100)));
  t.is(truncated.code, 'malformed');
  t.regex(truncated.message, /truncated/);

  const flipped = Buffer.from(real);
  flipped[500] = (flipped[500] as number) ^ 0xff;
  const damaged = refusal(() => importActivityFile(flipped));
  t.is(damaged.code, 'malformed');
  t.regex(damaged.message, /integrity check/);

  const tooBig = Buffer.alloc(IMPORT_LIMITS.maxFitBytes + 1);
  real.copy(tooBig, 0, 0, 14);
  t.is(refusal(() => importActivityFile(tooBig)).code, 'too-large');
});

test('XML: cut short, not XML at all, nested without end, oversized, or outside the accepted dates', async (t) => {
  const gpx = (await fixture('apps/strava-like-run.gpx')).toString();
  const cut = refusal(() => importActivityFile(Buffer.from(gpx.slice(0, 1500))));
  t.is(cut.code, 'malformed');
  const cutAtElement = refusal(() => importActivityFile(Buffer.from(gpx.slice(0, gpx.indexOf('</trkseg>') + 9))));
  t.is(cutAtElement.code, 'malformed');
  t.regex(cutAtElement.message, /ends before its <gpx> element is closed/);

  const deep = `<gpx version="1.1" creator="x"><trk><trkseg><trkpt lat="1" lon="1"><time>2024-01-01T00:00:00Z</time><extensions>${'<a>'.repeat(200)}${'</a>'.repeat(200)}</extensions></trkpt></trkseg></trk></gpx>`;
  t.is(refusal(() => importActivityFile(Buffer.from(deep))).code, 'malformed');

  const proto = '<gpx version="1.1" creator="x"><__proto__><polluted>1</polluted></__proto__></gpx>';
  t.is(refusal(() => importActivityFile(Buffer.from(proto))).code, 'malformed');
  t.is(({} as Record<string, unknown>).polluted, undefined);

  const oversized = Buffer.alloc(IMPORT_LIMITS.maxXmlBytes + 1, 0x20);
  oversized.write('<gpx>', 0);
  t.is(refusal(() => importActivityFile(oversized)).code, 'too-large');

  // Crafted runs of processing instructions or comments must not make the sniffer backtrack.
  t.is(refusal(() => importActivityFile(Buffer.from('<?'.repeat(40_000)))).code, 'unsupported-format');
  t.is(refusal(() => importActivityFile(Buffer.from(`${'<!---->'.repeat(9000)}x`))).code, 'unsupported-format');

  const point = (time: string, extra = '') => `<trkpt lat="45" lon="6"><time>${time}</time>${extra}</trkpt>`;
  const file = (...points: string[]) =>
    Buffer.from(`<gpx version="1.1" creator="x"><trk><trkseg>${points.join('')}</trkseg></trk></gpx>`);
  const old = refusal(() => importActivityFile(file(point('1850-01-01T00:00:00Z'), point('1850-01-01T00:00:05Z'))));
  t.regex(old.message, /would start on 1850-01-01T00:00:00.000Z; activities start between 1900 and 2100/);
  const long = refusal(() => importActivityFile(file(point('2024-01-01T00:00:00Z'), point('2024-02-10T00:00:00Z'))));
  t.is(long.code, 'too-large');
  const digits = `<ele>${'9'.repeat(1_000_000)}</ele>`;
  const backwards = importActivityFile(
    file(point('2024-01-01T00:00:10Z', digits), point('2024-01-01T00:00:05Z'), point('2024-01-01T00:00:20Z')),
  );
  t.deepEqual(Array.from(backwards.content.datastream.elapsed), [0, 10]);
  t.deepEqual(backwards.warnings, [
    '1 point(s) earlier than the point before them were skipped',
    '1 elevation value(s) outside -500..9000 m were ignored',
  ]);
  t.true(Number.isNaN(backwards.content.track.elevation[0] as number));
});

// ---------------------------------------------------------------- exports of generated activities

/** Activities as the JSON API, the importers or the database may hold them, odd values included. */
const activityArb = fc
  .record({
    sportId: fc.constantFrom(121, 381, 263, 402, 110, 388, 274),
    name: fc.option(fc.string({ maxLength: 300, unit: 'binary' }), { nil: null }),
    startMs: fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2090, 0, 1) }),
    steps: fc.array(
      fc.record({
        gap: fc.integer({ min: 1, max: 400 }),
        where: fc.constantFrom('both', 'both', 'datastream', 'track'),
        hr: fc.option(fc.double({ min: 0, max: 300, noNaN: true })),
        cadence: fc.option(fc.double({ min: 0, max: 400, noNaN: true })),
        power: fc.option(fc.integer({ min: 0, max: 4000 })),
        speed: fc.option(fc.double({ min: 0, max: 600_000, noNaN: true })),
        run: fc.double({ min: 0, max: 12, noNaN: true }),
        elevation: fc.option(fc.double({ min: -600, max: 9500, noNaN: true })),
        lap: fc.boolean(),
        dLat: fc.double({ min: -1e-4, max: 1e-4, noNaN: true }),
        dLon: fc.double({ min: -1e-4, max: 1e-4, noNaN: true }),
      }),
      { maxLength: 40 },
    ),
    first: fc.integer({ min: 0, max: 5 }),
    extra: fc.integer({ min: 0, max: 100 }),
    lat: fc.double({ min: -80, max: 80, noNaN: true }),
    lon: fc.double({ min: -179.9, max: 179.9, noNaN: true }),
    channels: fc.subarray(['hr', 'cadence', 'power', 'speed', 'distance', 'elevation', 'lap'] as const),
    calories: fc.option(fc.double({ min: 0, max: 5000, noNaN: true })),
    distance: fc.option(fc.double({ min: 0, max: 1000, noNaN: true })),
  })
  .map((g): ActivityContent => {
    const ds: number[] = [];
    const tr: number[] = [];
    const cols: Record<string, number[]> = {
      hr: [],
      cadence: [],
      power: [],
      speed: [],
      distance: [],
      elevation: [],
      lap: [],
    };
    const lat: number[] = [];
    const lon: number[] = [];
    const ele: number[] = [];
    let second = g.first - 1;
    let la = g.lat;
    let lo = g.lon;
    let total = 0;
    for (const s of g.steps) {
      second += s.gap;
      la += s.dLat * s.gap;
      lo += s.dLon * s.gap;
      total += s.run * s.gap;
      if (s.where !== 'track') {
        ds.push(second);
        cols.hr?.push(s.hr ?? Number.NaN);
        cols.cadence?.push(s.cadence ?? Number.NaN);
        cols.power?.push(s.power ?? Number.NaN);
        cols.speed?.push(s.speed ?? Number.NaN);
        cols.distance?.push(total);
        cols.elevation?.push(s.elevation ?? Number.NaN);
        cols.lap?.push(s.lap ? 1 : Number.NaN);
      }
      if (s.where !== 'datastream') {
        tr.push(second);
        lat.push(la);
        lon.push(lo);
        ele.push(s.elevation ?? Number.NaN);
      }
    }
    const datatypes = {
      hr: DATATYPE.HR_CURRENT,
      cadence: g.sportId === 381 ? DATATYPE.RPM_CURRENT : DATATYPE.CADENCE_CURRENT,
      power: DATATYPE.POWER_CURRENT,
      speed: DATATYPE.SPEED_CURRENT,
      distance: DATATYPE.DISTANCE,
      elevation: DATATYPE.ELEVATION_CURRENT,
      lap: DATATYPE.LAP,
    };
    const duration = Math.max(second, 0) + g.extra;
    const summaries = new Map<number, number>([[DATATYPE.DURATION, duration]]);
    if (g.calories !== null) summaries.set(DATATYPE.CALORIES, g.calories);
    if (g.distance !== null) summaries.set(DATATYPE.DISTANCE, g.distance * duration);
    return {
      sportId: g.sportId,
      name: g.name,
      startdate: new Date(g.startMs),
      duration,
      summaries,
      datastream: {
        elapsed: Int32Array.from(ds),
        channels: new Map(g.channels.map((c) => [datatypes[c], Float64Array.from(cols[c] as number[])])),
      },
      track: {
        elapsed: Int32Array.from(tr),
        latitude: Float64Array.from(lat),
        longitude: Float64Array.from(lon),
        elevation: Float64Array.from(ele),
      },
    };
  });

test('generated activities: export -> import -> export gives the identical GPX and TCX', (t) => {
  fc.assert(
    fc.property(activityArb, (content) => {
      const tcx = exportTcx(content);
      const again = exportTcx(importActivityFile(Buffer.from(tcx)).content);
      if (again !== tcx) throw new Error(`TCX differs:\n${tcx}\n---\n${again}`);
      const gpx = exportGpx(content);
      // A GPX without a located point (no track, or only (0, 0)) has nothing to import again.
      if (gpx.includes('<trkpt ')) {
        const gpxAgain = exportGpx(importActivityFile(Buffer.from(gpx)).content);
        if (gpxAgain !== gpx) throw new Error(`GPX differs:\n${gpx}\n---\n${gpxAgain}`);
      }
    }),
    { numRuns: 300 },
  );
  t.pass();
});

test('generated activities: every export validates against the official schemas', async (t) => {
  const samples = fc.sample(activityArb, { numRuns: 12, seed: 42 });
  for (const content of samples) {
    await assertValid(t, 'tcx', exportTcx(content));
    await assertValid(t, 'gpx', exportGpx(content));
  }
});

test('exports carry names safely, write +180 as -180, and stream in chunks', async (t) => {
  const n = 20_000;
  const content: ActivityContent = {
    sportId: 121,
    name: 'A <b>&"quoted"\' run\u0000\u0007 \uFFFE',
    startdate: new Date('2024-03-01T10:00:00.600Z'),
    duration: n,
    summaries: new Map([[DATATYPE.CALORIES, 999]]),
    datastream: {
      elapsed: Int32Array.from({ length: n }, (_, i) => i),
      channels: new Map([
        [DATATYPE.HR_CURRENT, Float64Array.from({ length: n }, (_, i) => 100 + (i % 50))],
        [DATATYPE.LAP, Float64Array.from({ length: n }, (_, i) => (i % 5000 === 4999 ? 1 : Number.NaN))],
      ]),
    },
    track: {
      elapsed: Int32Array.from({ length: n }, (_, i) => i),
      latitude: Float64Array.from({ length: n }, (_, i) => 10 + i * 1e-5),
      longitude: Float64Array.from({ length: n }, () => 179.999999999),
      elevation: new Float64Array(n).fill(Number.NaN),
    },
  };
  const chunks = [...gpxChunks(content)];
  t.true(chunks.length > 10);
  t.true(chunks.every((c) => c.length < CHUNK_CHARS + 1000));
  const gpx = chunks.join('');
  t.is(gpx, exportGpx(content));
  t.is(gpx.match(/<trkpt /g)?.length, n);
  t.regex(gpx, /<trkpt lat="10" lon="-180"><time>2024-03-01T10:00:01Z<\/time>/);
  t.regex(gpx, /<name>A &lt;b&gt;&amp;&quot;quoted&quot;&apos; run<\/name>/);
  await assertValid(t, 'gpx', gpx);
  const tcx = exportTcx(content);
  t.is(tcx.match(/<Lap /g)?.length, 4);
  t.deepEqual(
    [...tcx.matchAll(/<Calories>(\d+)</g)].map((m) => Number(m[1])),
    [249, 250, 250, 250],
  );
  await assertValid(t, 'tcx', tcx);
  t.is(importActivityFile(Buffer.from(tcx)).content.name, 'A <b>&"quoted"\' run');
});

test('splitTotal shares an integer total by weight, exactly, the same way every time', (t) => {
  t.deepEqual(splitTotal(35, [3, 63, 4]), [2, 31, 2]);
  t.deepEqual(splitTotal(10, [0, 0]), [0, 10]);
  t.deepEqual(splitTotal(0, [5, 5]), [0, 0]);
  fc.assert(
    fc.property(fc.nat(100_000), fc.array(fc.nat(10_000), { minLength: 1, maxLength: 50 }), (total, weights) => {
      const parts = splitTotal(total, weights);
      return parts.reduce((a, b) => a + b, 0) === total && parts.every((p) => p >= 0 && Number.isInteger(p));
    }),
  );
});
