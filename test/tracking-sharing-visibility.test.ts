import test from 'ava';
import type { ActivityRow } from '../shared/db/schema/tracking.ts';
import type { Track } from '../shared/tracking/activities/data.ts';
import { cumulativeDistance } from '../shared/tracking/formats/track-distance.ts';
import { decodeCursor, encodeCursor } from '../shared/tracking/sharing/cursor.ts';
import {
  effectiveMapVisibility,
  rowForViewer,
  seesActivity,
  seesMap,
  trimTrackEnds,
  VISIBILITIES,
  type Viewer,
  visibilitiesSeenBy,
} from '../shared/tracking/sharing/visibility.ts';

// The rules of who sees what (shared/tracking/sharing/visibility.ts), without HTTP.

test('an activity is seen by its owner always, by followers when followers or public, by others when public', (t) => {
  const seen = (viewer: Viewer) => VISIBILITIES.filter((v) => seesActivity(v, viewer));
  t.deepEqual(seen('owner'), ['private', 'followers', 'public']);
  t.deepEqual(seen('follower'), ['followers', 'public']);
  t.deepEqual(seen('public'), ['public']);
  for (const viewer of ['owner', 'follower', 'public'] as const) t.deepEqual(visibilitiesSeenBy(viewer), seen(viewer));
});

test('the map is never wider than the activity', (t) => {
  const map = (visibility: ActivityRow['visibility'], map_visibility: ActivityRow['visibility']) =>
    effectiveMapVisibility({ visibility, map_visibility });
  t.is(map('followers', 'public'), 'followers');
  t.is(map('public', 'followers'), 'followers');
  t.is(map('private', 'public'), 'private');
  t.is(map('public', 'public'), 'public');
  t.false(seesMap({ visibility: 'followers', map_visibility: 'public' }, 'public'));
  t.true(seesMap({ visibility: 'public', map_visibility: 'followers' }, 'follower'));
  t.false(seesMap({ visibility: 'public', map_visibility: 'private' }, 'follower'));
});

/** `n` points heading north, `step` degrees of latitude apart. */
function line(n: number, step = 1e-4): Track {
  return {
    elapsed: Int32Array.from({ length: n }, (_, i) => i),
    latitude: Float64Array.from({ length: n }, (_, i) => 50 + i * step),
    longitude: new Float64Array(n).fill(3),
    elevation: new Float64Array(n).fill(Number.NaN),
  };
}

test('trimming hides every point within N metres of either end, along the track, and keeps the rest', (t) => {
  const track = line(200);
  const along = cumulativeDistance(track);
  const total = along[199] as number;
  const trimmed = trimTrackEnds(track, 300);
  t.true(trimmed.elapsed.length > 0);
  const first = trimmed.elapsed[0] as number;
  const last = trimmed.elapsed.at(-1) as number;
  t.true((along[first] as number) >= 300 && (along[first - 1] as number) < 300);
  t.true(total - (along[last] as number) >= 300 && total - (along[last + 1] as number) < 300);
  t.is(trimmed.elapsed.length, last - first + 1);
  t.is(trimmed.latitude[0], track.latitude[first]);
  t.is(trimTrackEnds(track, 0), track);
  t.is(trimTrackEnds(track, total / 2 + 1).elapsed.length, 0, 'shorter than twice N: nothing shown');
  t.is(trimTrackEnds(line(0), 100).elapsed.length, 0);
});

test('rows others see carry no thumbnail, and a start point only where the map shows whole', (t) => {
  const row = {
    thumbnail: 'https://example.com/t.png',
    latitude: 50,
    longitude: 3,
    elevation: 10,
    visibility: 'public',
    map_visibility: 'public',
    map_hidden_ends: 0,
  } as ActivityRow;
  t.is(rowForViewer(row, 'owner'), row);
  t.like(rowForViewer(row, 'public'), { thumbnail: null, latitude: 50 });
  t.like(rowForViewer({ ...row, map_hidden_ends: 100 }, 'public'), {
    thumbnail: null,
    latitude: null,
    elevation: null,
  });
  t.like(rowForViewer({ ...row, map_visibility: 'followers' }, 'public'), { latitude: null });
  t.like(rowForViewer({ ...row, map_visibility: 'followers' }, 'follower'), { latitude: 50 });
});

test('a cursor is the position it was made from; anything else is no cursor', (t) => {
  const position = { startdate: new Date('2024-05-01T08:30:00.123Z'), id: 'a1b2c3' };
  t.deepEqual(decodeCursor(encodeCursor(position)), position);
  for (const bad of [
    '',
    'not a cursor',
    Buffer.from('123').toString('base64url'),
    Buffer.from('x.y').toString('base64url'),
    'a'.repeat(300),
  ])
    t.is(decodeCursor(bad), undefined, bad);
});
