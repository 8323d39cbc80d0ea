import type { ActivityContent } from './data.ts';

/** The activity columns that follow from its content and device; stored, never written by clients. */
export interface DerivedActivityFields {
  available_datatypes: number[];
  track_flag: boolean;
  datastream_flag: boolean;
  /** The first GPS point, when there is a track. */
  latitude: number | null;
  longitude: number | null;
  elevation: number | null;
  manual: boolean;
}

/**
 * The derived fields of an activity, in one place: every write stores what this returns, so
 * `availableDatatypes`, the flags, the first point and `manual` cannot drift from the content.
 */
export function deriveActivityFields(
  content: Pick<ActivityContent, 'summaries' | 'datastream' | 'track'>,
  userDeviceId: string | null,
): DerivedActivityFields {
  const datatypes = new Set<number>(content.summaries.keys());
  for (const id of content.datastream.channels.keys()) datatypes.add(id);
  const { track } = content;
  const hasTrack = track.elapsed.length > 0;
  const elevation = hasTrack ? (track.elevation[0] as number) : Number.NaN;
  return {
    available_datatypes: [...datatypes].sort((a, b) => a - b),
    track_flag: hasTrack,
    datastream_flag: content.datastream.elapsed.length > 0,
    latitude: hasTrack ? (track.latitude[0] as number) : null,
    longitude: hasTrack ? (track.longitude[0] as number) : null,
    elevation: Number.isNaN(elevation) ? null : elevation,
    manual: userDeviceId === null,
  };
}
