import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Encoder, type Mesg, Profile } from '@garmin/fitsdk';
import test from 'ava';
import { DATATYPE } from '../shared/tracking/activities/data.ts';
import { lapEnd } from '../shared/tracking/formats/fit-import.ts';
import { exportGpx } from '../shared/tracking/formats/gpx-export.ts';
import { detectFormat, importActivityFile, isActivityFileMediaType } from '../shared/tracking/formats/import-file.ts';
import { IMPORT_LIMITS } from '../shared/tracking/formats/limits.ts';
import { lapDistanceOffsets } from '../shared/tracking/formats/tcx-import.ts';
import { assertRoundTrip, channel, fixture, refusal, schemaValidator, summary } from './helpers/activity-files.ts';

let tmp: string;
test.before(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'tracking-formats-'));
});
test.after.always(() => rm(tmp, { recursive: true, force: true }));
const assertValid = schemaValidator(() => tmp);

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
  // Measured along the track within each segment: the lines to the next segment and track (200 m) are not distance.
  t.true(Math.abs((distance[4] as number) - 22.24) < 0.01, `distance measured along the track: ${distance[4]}`);
  t.deepEqual(distance.slice(2), [distance[2], distance[2], distance[2]]);
  // Each segment climbs alone (as gpxpy): 400 to 401 in the first, nothing in the one-point segment and track.
  t.like(summary(a), { 24: 600, 3: 140, 4: 127.2, 15: 420, 16: 400, 18: 1, 19: 0, 11: 82, 13: 81, 179: 250 });
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
  // Climb on the series smoothed as gpxpy does (0.3, 0.4, 0.3): 500 503 505 501 496 492 climbs 3.2 and descends 11.2.
  t.like(summary(a), { 5: 110, 23: 35, 3: 130, 24: 70, 7: 36000, 18: 3.2, 19: 11.2, 15: 505, 16: 492 });

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
  t.like(summary(a), { 5: 72, 23: 15, 24: 9, 3: 129, 4: 124.5, 179: 209, 15: 409, 16: 400, 18: 9 });

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
  t.is(long.code, 'over-limit');
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

test('TCX lap distances: a restart near 0 continues from the laps before; a small step back is no restart', (t) => {
  const lap = (...distances: number[]) => ({
    Track: [{ Trackpoint: distances.map((d) => ({ DistanceMeters: String(d) })) }],
  });
  t.deepEqual(lapDistanceOffsets([lap(0, 100, 250), lap(2, 120, 250), lap(1, 500)]), [0, 250, 500]);
  t.deepEqual(lapDistanceOffsets([lap(0, 100, 250), lap(249.5, 400)]), [0, 0], 'noise: no restart');
  t.deepEqual(lapDistanceOffsets([lap(0, 100), lap(), lap(3, 50)]), [0, 0, 100], 'a lap without distances');
});

test('FIT lap end: its timestamp, or start_time + total_elapsed_time when the timestamp is the start', (t) => {
  const start = new Date('2024-05-01T08:00:00Z');
  t.is(
    lapEnd({ startTime: start, timestamp: new Date(start.getTime() + 60_000), totalElapsedTime: 59 }),
    start.getTime() + 60_000,
  );
  t.is(lapEnd({ startTime: start, timestamp: start, totalElapsedTime: 125.2 }), start.getTime() + 125_200);
  t.is(lapEnd({ startTime: start, timestamp: start }), start.getTime(), 'nothing better to go by');
});
