import { computeSummaries } from '../formats/summaries.ts';
import { cumulativeDistance } from '../formats/track-distance.ts';
import { type ActivityContent, DATATYPE, type Datastream, type Track } from './data.ts';
import { type MovingRule, movingFields } from './moving-time.ts';

/**
 * Laps (docs/tracking-activities.md, "Laps"): an activity's laps are where its lap markers cut it
 * (datatype 20 = 1 on the sample a lap ends at, as the importers write them and a JSON create may
 * send them). Laps follow each other: one begins where the one before ended, the first at the
 * activity's start, and the last runs to the activity's end. Time between two laps of a file (a
 * rest the device kept out of every lap) is thus in the next lap, a pause of its moving time.
 * The TCX export writes these laps, the GPX export one segment for each.
 */

/** A lap as sample positions: samples [from, to) and its span in elapsed seconds [start, end]. */
export interface LapRange {
  from: number;
  to: number;
  start: number;
  end: number;
}

/**
 * The laps of samples at `elapsed` (ascending seconds), `isEnd(i)` telling a marked sample: cut
 * after each marked sample; samples after the last marker make the last lap, else the last lap
 * is stretched; either way it runs to `duration` (or the last sample, when later). Always at
 * least one lap, with no sample when there is none.
 */
export function lapRanges(elapsed: ArrayLike<number>, isEnd: (i: number) => boolean, duration: number): LapRange[] {
  const laps: LapRange[] = [];
  let from = 0;
  let start = 0;
  for (let i = 0; i < elapsed.length; i++) {
    if (isEnd(i)) {
      const end = elapsed[i] as number;
      laps.push({ from, to: i + 1, start, end });
      from = i + 1;
      start = end;
    }
  }
  const lastSecond = elapsed.length ? (elapsed[elapsed.length - 1] as number) : 0;
  const end = Math.max(duration, lastSecond, start);
  const last = laps[laps.length - 1];
  if (from < elapsed.length || !last) laps.push({ from, to: elapsed.length, start, end });
  else last.end = Math.max(last.end, end);
  return laps;
}

/** A lap marker: any value but 0 (and NaN, no value). */
export const isLapMarker = (v: number | undefined): boolean => v !== undefined && !Number.isNaN(v) && v !== 0;

export interface Lap {
  /** 1 for the first. */
  index: number;
  /** Elapsed seconds since the activity's start when the lap begins. */
  start: number;
  /** Seconds, pauses included. */
  duration: number;
  /** Seconds in motion under the sport's rule, applied to the lap alone (`duration` without a rule). */
  movingTime: number;
  /** Metres; null when the activity has neither a distance stream nor a track. */
  distance: number | null;
  /** Datatype id to the lap's value, as an activity's `dataSummaries` (24, 5, 9, 7, 4, 3, 15, 16, 17, 18, 19, cadence, power). */
  summaries: Map<number, number>;
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** What moving time reads of the datastream (moving-time.ts). */
const MOVING_DATATYPES = [DATATYPE.DISTANCE, DATATYPE.SPEED_CURRENT];

/**
 * Cumulative metres at the samples of the distance stream (a value below an earlier one counts as
 * that one), else along the track; undefined with neither.
 */
function distanceSource(content: Pick<ActivityContent, 'datastream' | 'track'>) {
  const { datastream, track } = content;
  const channel = datastream.channels.get(DATATYPE.DISTANCE);
  if (channel) {
    const at: number[] = [];
    const metres: number[] = [];
    let max = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < channel.length; i++) {
      const v = channel[i] as number;
      if (Number.isNaN(v)) continue;
      max = Math.max(max, v);
      at.push(datastream.elapsed[i] as number);
      metres.push(max);
    }
    if (at.length) return { at, metres };
  }
  if (track.elapsed.length) return { at: Array.from(track.elapsed), metres: Array.from(cumulativeDistance(track)) };
  return undefined;
}

/** How many of `sorted` (ascending) are at or below `value`. */
function countAtOrBelow(sorted: ArrayLike<number>, value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((sorted[mid] as number) <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Metres covered at elapsed second `second`: the last source sample at or before it, 0 before the first. */
function distanceAt(source: { at: number[]; metres: number[] }, second: number): number {
  const n = countAtOrBelow(source.at, second);
  return n === 0 ? 0 : (source.metres[n - 1] as number);
}

/** `values` less `shift`, in a new array. */
function shifted(values: Int32Array, shift: number): Int32Array {
  const out = new Int32Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = (values[i] as number) - shift;
  return out;
}

/** Samples [from, to) of a datastream (of the `only` datatypes, when given), their seconds shifted by `-shift`. */
function sliceDatastream(datastream: Datastream, from: number, to: number, shift: number, only?: number[]): Datastream {
  const channels = new Map<number, Float64Array>();
  for (const [datatype, values] of datastream.channels) {
    if (!only || only.includes(datatype)) channels.set(datatype, values.subarray(from, to));
  }
  return { elapsed: shifted(datastream.elapsed.subarray(from, to), shift), channels };
}

/** The track's points in [start, end], their seconds shifted by `-start`. */
function sliceTrack(track: Track, start: number, end: number): Track {
  const from = countAtOrBelow(track.elapsed, start - 1);
  const to = countAtOrBelow(track.elapsed, end);
  return {
    elapsed: shifted(track.elapsed.subarray(from, to), start),
    latitude: track.latitude.subarray(from, to),
    longitude: track.longitude.subarray(from, to),
    elevation: track.elevation.subarray(from, to),
  };
}

/**
 * The laps of an activity and the figures of each. Channel figures are the activity's summary
 * rules (summaries.ts) over the lap's samples; `distance` is the distance reached at the lap's
 * end minus at its start (the first lap from 0); 9 is that over `duration`; 17 is the mean
 * elevation. Moving time: `rule` (the sport's, moving-time.ts) over the lap's samples and the
 * interval that leads into them. An activity without samples is one lap whose figures are the
 * activity's summaries.
 */
export function computeLaps(
  content: Pick<ActivityContent, 'duration' | 'summaries' | 'datastream' | 'track'>,
  rule: MovingRule | null,
): Lap[] {
  const { datastream, track } = content;
  const markers = datastream.channels.get(DATATYPE.LAP);
  const ranges = lapRanges(datastream.elapsed, (i) => isLapMarker(markers?.[i]), content.duration);
  const source = distanceSource(content);
  const cadence = datastream.channels.has(DATATYPE.RPM_CURRENT) ? DATATYPE.RPM_CURRENT : DATATYPE.CADENCE_CURRENT;
  return ranges.map((range, k): Lap => {
    const duration = range.end - range.start;
    const distance = source
      ? round2(distanceAt(source, range.end) - (k === 0 ? 0 : distanceAt(source, range.start)))
      : null;
    const samples = sliceDatastream(datastream, range.from, range.to, range.start);
    // The sample the lap before ended at starts the lap's first interval, so moving time sees it.
    const lead = sliceDatastream(
      datastream,
      k === 0 ? range.from : Math.max(0, range.from - 1),
      range.to,
      range.start,
      MOVING_DATATYPES,
    );
    const lapTrack = sliceTrack(track, range.start, range.end);
    const moving = movingFields({ duration, summaries: new Map(), datastream: lead, track: lapTrack }, rule);
    const summaries =
      datastream.elapsed.length === 0 ? new Map(content.summaries) : computeSummaries(samples, duration, {}, cadence);
    if (datastream.elapsed.length) {
      summaries.delete(DATATYPE.DISTANCE);
      summaries.delete(DATATYPE.SPEED_AVG);
      if (distance !== null) {
        summaries.set(DATATYPE.DISTANCE, distance);
        if (duration > 0) summaries.set(DATATYPE.SPEED_AVG, round2((distance / duration) * 3600));
      }
      const elevation = meanOf(samples.channels.get(DATATYPE.ELEVATION_CURRENT));
      if (elevation !== undefined) summaries.set(ELEVATION_AVG, round2(elevation));
    }
    return {
      index: k + 1,
      start: range.start,
      duration,
      movingTime: moving.moving_time,
      distance: datastream.elapsed.length === 0 ? (content.summaries.get(DATATYPE.DISTANCE) ?? distance) : distance,
      summaries: sortedById(summaries),
    };
  });
}

/** Datatype 17, Elevation avg (m). */
export const ELEVATION_AVG = 17;

function meanOf(values: Float64Array | undefined): number | undefined {
  if (!values) return undefined;
  let sum = 0;
  let count = 0;
  for (const v of values) {
    if (Number.isNaN(v)) continue;
    sum += v;
    count++;
  }
  return count ? sum / count : undefined;
}

const sortedById = (m: Map<number, number>) => new Map([...m].sort((a, b) => a[0] - b[0]));
