import type { ActivityRow, Visibility } from '../../db/schema/tracking.ts';
import type { ActivityContent, Track } from '../activities/data.ts';
import { cumulativeDistance } from '../formats/track-distance.ts';

/**
 * Who sees what of an activity beside its owner (docs/tracking-sharing-users.md): the rules every
 * read of another user's activity applies, without HTTP.
 */

export const VISIBILITIES = ['private', 'followers', 'public'] as const satisfies readonly Visibility[];

/** Metres of track a user may hide at each end of their activities' maps. */
export const MAX_MAP_HIDDEN_ENDS = 10_000;

/**
 * Who reads: the owner; a `follower`, a user the owner shares with (an accepted share); or
 * anyone else signed in (`public`).
 */
export type Viewer = 'owner' | 'follower' | 'public';

const RANK: Record<Visibility, number> = { private: 0, followers: 1, public: 2 };
const NEEDED: Record<Exclude<Viewer, 'owner'>, number> = { follower: RANK.followers, public: RANK.public };

/** Whether `viewer` sees an activity of `visibility` at all. */
export function seesActivity(visibility: Visibility, viewer: Viewer): boolean {
  return viewer === 'owner' || RANK[visibility] >= NEEDED[viewer];
}

/** The visibilities of the activities `viewer` sees. */
export function visibilitiesSeenBy(viewer: Viewer): Visibility[] {
  return VISIBILITIES.filter((v) => seesActivity(v, viewer));
}

/** The map is never shown wider than the activity itself: the narrower of the two. */
export function effectiveMapVisibility(row: Pick<ActivityRow, 'visibility' | 'map_visibility'>): Visibility {
  return RANK[row.map_visibility] <= RANK[row.visibility] ? row.map_visibility : row.visibility;
}

/** Whether `viewer` sees the activity's map (track, start point), ends hidden for all but the owner. */
export function seesMap(row: Pick<ActivityRow, 'visibility' | 'map_visibility'>, viewer: Viewer): boolean {
  return seesActivity(effectiveMapVisibility(row), viewer);
}

/**
 * The track without the points within `metres` of its start or of its end, measured along the
 * track (what a start at home or an end at work would show). A track shorter than twice
 * `metres` keeps no point.
 */
export function trimTrackEnds(track: Track, metres: number): Track {
  const n = track.elapsed.length;
  if (metres <= 0 || n === 0) return track;
  const along = cumulativeDistance(track);
  const total = along[n - 1] as number;
  let first = 0;
  while (first < n && (along[first] as number) < metres) first++;
  let last = n - 1;
  while (last >= first && total - (along[last] as number) < metres) last--;
  const end = Math.max(first, last + 1);
  return {
    elapsed: track.elapsed.subarray(first, end),
    latitude: track.latitude.subarray(first, end),
    longitude: track.longitude.subarray(first, end),
    elevation: track.elevation.subarray(first, end),
  };
}

const NO_TRACK: Track = {
  elapsed: new Int32Array(0),
  latitude: new Float64Array(0),
  longitude: new Float64Array(0),
  elevation: new Float64Array(0),
};

/**
 * The row as `viewer` may see it: the thumbnail (a drawing of the whole track) for the owner
 * only; the start point only where the map shows and no end is hidden (a list carries no track
 * to take the first shown point from).
 */
export function rowForViewer(row: ActivityRow, viewer: Viewer): ActivityRow {
  if (viewer === 'owner') return row;
  const start = seesMap(row, viewer) && row.map_hidden_ends === 0;
  return {
    ...row,
    thumbnail: null,
    ...(start ? {} : { latitude: null, longitude: null, elevation: null }),
  };
}

/**
 * An activity read whole as `viewer` may see it: the track trimmed at both ends (or gone where
 * the map is not theirs to see), the start point the first point shown.
 */
export function contentForViewer(
  found: { row: ActivityRow; content: ActivityContent },
  viewer: Viewer,
): { row: ActivityRow; content: ActivityContent } {
  if (viewer === 'owner') return found;
  const track = seesMap(found.row, viewer) ? trimTrackEnds(found.content.track, found.row.map_hidden_ends) : NO_TRACK;
  const shown = track.elapsed.length > 0;
  const elevation = track.elevation[0] as number;
  return {
    row: {
      ...found.row,
      thumbnail: null,
      latitude: shown ? (track.latitude[0] as number) : null,
      longitude: shown ? (track.longitude[0] as number) : null,
      elevation: shown && !Number.isNaN(elevation) ? elevation : null,
    },
    content: { ...found.content, track },
  };
}
