import test from 'ava';
import { parseActivitiesCsv } from '../shared/tracking/imports/activities-csv.ts';
import { bulkContents, bulkMember, classifyMember } from '../shared/tracking/imports/bulk-members.ts';
import { gunzipMember } from '../shared/tracking/imports/gzip-member.ts';
import { ZIP_LIMITS, type ZipLimits, ZipRefusal } from '../shared/tracking/imports/zip-limits.ts';
import { inspectZip } from '../shared/tracking/imports/zip-reader.ts';
import { fixture } from './helpers/activity-files.ts';
import { gpxOf, makeZip, renameInZip, STRAVA_HEADER } from './helpers/zips.ts';

// Issue 38 §2: the building blocks of a bulk import, without HTTP: the zip and its limits, gzip
// members, a Strava-style activities.csv, and what each member is.

const gpx = gpxOf(new Date('2024-05-01T07:00:00Z'), 30);

async function refused(zip: Buffer, limits: ZipLimits = ZIP_LIMITS): Promise<ZipRefusal> {
  const error = await inspectZip(zip, limits).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ZipRefusal)) throw new Error(`not refused: ${String(error)}`);
  return error;
}

test('a zip lists its files (folders left out) and reads each one', async (t) => {
  const zip = await makeZip([
    { name: 'activities/', bytes: '' },
    { name: 'activities/1.gpx', bytes: gpx },
    { name: 'activities/2.gpx.gz', bytes: gpx, gzip: true },
  ]);
  const inspected = await inspectZip(zip);
  t.deepEqual(
    inspected.members.map((m) => m.name),
    ['activities/1.gpx', 'activities/2.gpx.gz'],
  );
  const [first] = inspected.members;
  t.is((await inspected.read(first as never)).toString(), gpx);
  inspected.close();
});

test('bytes that are not a zip, and a zip without a file, are refused as such', async (t) => {
  t.is((await refused(Buffer.from('<gpx>not a zip</gpx>'))).reason, 'not-a-zip');
  t.is((await refused(await makeZip([]))).reason, 'empty');
  const onlyFolders = await refused(await makeZip([{ name: 'a/', bytes: '' }]));
  t.is(onlyFolders.reason, 'empty');
  t.is(onlyFolders.message, 'the zip holds no file');
});

test('each limit refuses the zip and names itself', async (t) => {
  const three = await makeZip([1, 2, 3].map((i) => ({ name: `${i}.gpx`, bytes: gpx })));
  const entries = await refused(three, { ...ZIP_LIMITS, maxEntries: 2 });
  t.is(entries.reason, 'maxEntries');
  t.regex(entries.message, /3 entries.*ZIP_LIMITS\.maxEntries: 2/);

  const total = await refused(three, { ...ZIP_LIMITS, maxTotalBytes: gpx.length * 2 });
  t.is(total.reason, 'maxTotalBytes');
  t.regex(total.message, /ZIP_LIMITS\.maxTotalBytes/);

  const big = await refused(three, { ...ZIP_LIMITS, maxEntryBytes: 100 });
  t.is(big.reason, 'maxEntryBytes');

  // A bomb: 20 MB of zeros deflate about a thousand times.
  const bomb = await refused(await makeZip([{ name: 'bomb.gpx', bytes: Buffer.alloc(20 * 1024 * 1024) }]));
  t.is(bomb.reason, 'maxRatio');
  t.regex(bomb.message, /inflates \d+ times.*ZIP_LIMITS\.maxRatio: 100/);

  const deep = await refused(await makeZip([{ name: 'a/b/c/d/e/f/g/h/i/x.gpx', bytes: gpx }]));
  t.is(deep.reason, 'maxDepth');
  t.regex(deep.message, /9 folders deep.*ZIP_LIMITS\.maxDepth: 8/);

  const long = await refused(await makeZip([{ name: `${'n'.repeat(600)}.gpx`, bytes: gpx }]));
  t.is(long.reason, 'maxNameBytes');
});

test('a path that climbs out (.. with either separator) or an absolute one is refused whole', async (t) => {
  for (const [name, bad] of [
    ['aa/x.gpx', '../x.gpx'],
    ['xxxx.gpx', '/etc.gpx'],
    // yauzl reads Windows separators as `/`: this one climbs out too.
    ['bb_x.gpx', '..\\x.gpx'],
  ] as const) {
    const zip = renameInZip(await makeZip([{ name, bytes: gpx }]), name, bad);
    const refusal = await refused(zip);
    t.is(refusal.reason, 'path-names', bad);
    t.regex(refusal.message, /paths must be relative/);
  }
});

test('gzip members inflate within their limits; a gzip bomb or a damaged one is reported, not read', async (t) => {
  const { gzipSync } = await import('node:zlib');
  const ok = await gunzipMember(gzipSync(Buffer.from(gpx)));
  t.is('bytes' in ok ? ok.bytes.toString() : '', gpx);
  const bomb = await gunzipMember(gzipSync(Buffer.alloc(10 * 1024 * 1024)));
  t.true('problem' in bomb && /ZIP_LIMITS\.maxRatio/.test(bomb.problem));
  const cut = await gunzipMember(gzipSync(Buffer.from(gpx)).subarray(0, 30));
  t.true('problem' in cut && /not a readable gzip/.test(cut.problem));
});

test('members are sniffed: GPX, TCX, FIT (gzipped or not) are activities; anything else is skipped with the reason', async (t) => {
  const { gzipSync } = await import('node:zlib');
  const fit = await fixture('devices/fit/cottwich.fit');
  const tcx = await fixture('devices/tcx/2x2km.tcx');
  const format = async (name: string, bytes: Buffer) => {
    const found = await classifyMember(name, bytes);
    return 'format' in found ? found.format : found.reason;
  };
  t.is(await format('a.gpx', Buffer.from(gpx)), 'gpx');
  t.is(await format('a.tcx', tcx), 'tcx');
  t.is(await format('a.fit', fit), 'fit');
  t.is(await format('a.fit.gz', gzipSync(fit)), 'fit');
  t.is(await format('a.gpx.gz', gzipSync(Buffer.from(gpx))), 'gpx');
  // The bytes decide, not the name.
  t.is(await format('ride.dat', fit), 'fit');
  t.regex(await format('photo.jpg', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3])), /is not a GPX, TCX or FIT file/);
  t.regex(await format('notes.html', Buffer.from('<html><body/></html>')), /its XML root element is <html>/);
  t.is(await format('empty.gpx', Buffer.alloc(0)), 'the file is empty');
  t.regex(await format('inner.zip', await makeZip([{ name: 'x.gpx', bytes: gpx }])), /nested archives are not read/);
  t.regex(await format('double.gpx.gz', gzipSync(gzipSync(Buffer.from(gpx)))), /nested archives/);
});

test('a Strava activities.csv names, types and describes its files (repeated headers, quoted commas and new lines)', (t) => {
  const csv = `${STRAVA_HEADER}
1,"May 1, 2024, 7:00:00 AM",Morning Run,Run,"Easy, with
strides",1800,5.1,,,false,,,activities/1.gpx,,,1800,1750,5100
2,"May 2, 2024, 7:00:00 AM",Lunch Ride,Ride,,3600,30,,,false,,,activities/2.fit.gz,,,3600,3500,30000
3,"May 3, 2024, 7:00:00 AM",Manual entry,Yoga,,600,0,,,false,,,,,,600,600,0
4,"May 4, 2024, 7:00:00 AM",Odd,Quidditch,,600,0,,,false,,,activities/4.gpx,,,600,600,0
`;
  const listing = parseActivitiesCsv(csv, { nameLength: 255, commentLength: 10_000 });
  if (!('files' in listing)) return t.fail(listing.problem);
  t.deepEqual(Object.fromEntries(listing.files), {
    'activities/1.gpx': { name: 'Morning Run', sportId: 121, description: 'Easy, with\nstrides' },
    'activities/2.fit.gz': { name: 'Lunch Ride', sportId: 381 },
    'activities/4.gpx': { name: 'Odd', unknownType: 'Quidditch' },
  });
});

test('a CSV that does not parse, or has no Filename column, is a problem, not a refusal', (t) => {
  const broken = parseActivitiesCsv('Filename,Activity Name\n"activities/1.gpx,Unclosed\n', {
    nameLength: 255,
    commentLength: 10_000,
  });
  t.true('problem' in broken && /does not parse/.test(broken.problem));
  const noFiles = parseActivitiesCsv('Activity Name\nx\n', { nameLength: 255, commentLength: 10_000 });
  t.true('problem' in noFiles && /no Filename column/.test(noFiles.problem));
});

test('a bulk zip: the listing applies to its files from its own folder; litter is left out', async (t) => {
  const csv = `${STRAVA_HEADER}\n1,d,Hill repeats,Trail Run,,1,1,,,,,,activities/1.gpx.gz,,,1,1,1\n`;
  const zip = await makeZip([
    { name: 'export_42/activities.csv', bytes: csv },
    { name: 'export_42/activities/1.gpx.gz', bytes: gpx, gzip: true },
    { name: 'export_42/profile.jpg', bytes: Buffer.from([0xff, 0xd8, 0xff]) },
    { name: '__MACOSX/export_42/._activities.csv', bytes: 'x' },
  ]);
  const inspected = await inspectZip(zip);
  const contents = await bulkContents(inspected);
  t.deepEqual(
    contents.members.map((m) => m.name),
    ['export_42/activities/1.gpx.gz', 'export_42/profile.jpg'],
  );
  const [activity, photo] = await Promise.all(contents.members.map((m) => bulkMember(inspected, contents, m)));
  t.like(activity, { kind: 'activity', format: 'gpx', listed: { name: 'Hill repeats', sportId: 126 } });
  t.like(photo, { kind: 'skipped', name: 'export_42/profile.jpg' });
  inspected.close();

  const badCsv = await inspectZip(
    await makeZip([
      { name: 'activities.csv', bytes: 'a,"b\n' },
      { name: '1.gpx', bytes: gpx },
    ]),
  );
  const withProblem = await bulkContents(badCsv);
  t.regex(withProblem.listingProblem ?? '', /does not parse/);
  t.is(withProblem.members.length, 1);
  badCsv.close();
});
