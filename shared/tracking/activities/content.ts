import type { FieldError } from '../../errors.ts';
import { invalid } from '../../errors.ts';
import type { ActivityContent, Datastream, Track } from './data.ts';
import { emptyDatastream, emptyTrack } from './data.ts';

/**
 * The limits of an activity's content (docs/tracking-activities.md). Elapsed seconds are bounded
 * by the longest activity, not by its `duration`: devices report `duration` as moving time, and a
 * last fix a second after the stop is common; refusing the whole activity for it would lose data.
 */
export const ACTIVITY_LIMITS = {
  /** Seven days, in seconds: the longest `duration` and the largest elapsed second of a sample. */
  maxSeconds: 7 * 24 * 3600,
  /**
   * Datastream samples: 48 hours at 1 Hz (a 100-mile or 24-hour race with room to spare). A longer
   * activity records less often (smart recording); a week at 1 Hz is a log, not an activity.
   */
  maxSamples: 172_800,
  /** GPS points of the track, bounded as the samples are. */
  maxTrackPoints: 172_800,
  /**
   * Samples × datatypes of a datastream (each channel is dense, one value per sample): a 24-hour
   * activity at 1 Hz may carry 46 datatypes. Bounds the memory one request can take.
   */
  maxDatastreamCells: 4_000_000,
  maxSummaries: 500,
  nameLength: 255,
  commentLength: 10_000,
  userSessionLength: 255,
  maxTags: 50,
  tagLength: 100,
  maxImages: 20,
  urlLength: 2048,
} as const;

const thousands = (n: number) => n.toLocaleString('en');

/** The refusal of a datastream of `n` samples, naming the limit. */
export const tooManySamples = (n: number) =>
  `has ${thousands(n)} samples; an activity holds at most ${thousands(ACTIVITY_LIMITS.maxSamples)} (ACTIVITY_LIMITS.maxSamples: 48 hours at 1 Hz; record less often for longer)`;

/** The refusal of a track of `n` points, naming the limit. */
export const tooManyPoints = (n: number) =>
  `has ${thousands(n)} points; an activity's track holds at most ${thousands(ACTIVITY_LIMITS.maxTrackPoints)} (ACTIVITY_LIMITS.maxTrackPoints: 48 hours at 1 Hz; record less often for longer)`;

/**
 * What an activity's content may hold, whoever writes it (a JSON create, a file import): at most
 * maxSamples samples, maxTrackPoints GPS points and maxSeconds from its start to its end or its
 * last sample. Each problem names its member and the limit.
 */
export function contentLimitProblems(
  content: Pick<ActivityContent, 'duration' | 'datastream' | 'track'>,
): FieldError[] {
  const L = ACTIVITY_LIMITS;
  const problems: FieldError[] = [];
  const samples = content.datastream.elapsed.length;
  const points = content.track.elapsed.length;
  const last = Math.max(content.duration, content.datastream.elapsed.at(-1) ?? 0, content.track.elapsed.at(-1) ?? 0);
  if (last > L.maxSeconds)
    problems.push({
      path: 'body.duration',
      message: `spans ${thousands(last)} s; an activity lasts at most ${thousands(L.maxSeconds)} s (ACTIVITY_LIMITS.maxSeconds: 7 days)`,
    });
  if (samples > L.maxSamples) problems.push({ path: 'body.datastream', message: tooManySamples(samples) });
  if (points > L.maxTrackPoints) problems.push({ path: 'body.locations', message: tooManyPoints(points) });
  return problems;
}

/** At most this many problems are reported: a 100,000-sample stream of bad values is not echoed back. */
const MAX_REPORTED = 20;

/** `0`, `1`, … without sign, leading zero, fraction or exponent, at most ACTIVITY_LIMITS.maxSeconds. */
export function elapsedKey(key: string): number | undefined {
  if (!/^(0|[1-9]\d{0,6})$/.test(key)) return undefined;
  const n = Number(key);
  return n <= ACTIVITY_LIMITS.maxSeconds ? n : undefined;
}

/** A datatype id as an object key: a positive integer without sign or leading zero. */
export function datatypeKey(key: string): number | undefined {
  if (!/^[1-9]\d{0,8}$/.test(key)) return undefined;
  return Number(key);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

class Problems {
  readonly list: FieldError[] = [];
  add(path: string, message: string): void {
    if (this.list.length < MAX_REPORTED) this.list.push({ path, message });
  }
  get full(): boolean {
    return this.list.length >= MAX_REPORTED;
  }
}

const ELAPSED_MESSAGE = `must be an elapsed time in whole seconds, from 0 to ${ACTIVITY_LIMITS.maxSeconds}`;

/** `dataSummaries`: datatype id (string key) to a number. Unknown ids are the store's check. */
export function summariesFromJson(json: Record<string, unknown>, path = 'body.dataSummaries'): Map<number, number> {
  const problems = new Problems();
  const out = new Map<number, number>();
  const keys = Object.keys(json);
  if (keys.length > ACTIVITY_LIMITS.maxSummaries)
    throw invalid([{ path, message: `must have at most ${ACTIVITY_LIMITS.maxSummaries} datatypes` }]);
  for (const key of keys) {
    const id = datatypeKey(key);
    const value = json[key];
    if (id === undefined) problems.add(`${path}.${key}`, 'must be keyed by a datatype id (a positive integer)');
    else if (typeof value !== 'number' || !Number.isFinite(value)) problems.add(`${path}.${key}`, 'must be a number');
    else out.set(id, value);
  }
  if (problems.list.length) throw invalid(problems.list);
  return out;
}

/**
 * `datastream`: elapsed second (string key) to `{datatype id: number}`, into columns aligned on
 * one array of elapsed seconds (NaN where a sample has no value of a datatype). A sample without
 * values (`"12": {}`) is kept: it round-trips as sent.
 */
export function datastreamFromJson(
  json: Record<string, unknown> | null | undefined,
  path = 'body.datastream',
): Datastream {
  if (!json) return emptyDatastream();
  const problems = new Problems();
  // Keys that are array indices (every valid elapsed second is one) come out of Object.keys in
  // ascending numeric order, once each: the columns are sorted without sorting.
  const keys = Object.keys(json);
  const n = keys.length;
  if (n > ACTIVITY_LIMITS.maxSamples) throw invalid([{ path, message: tooManySamples(n) }]);
  const elapsed = new Int32Array(n);
  const channels = new Map<number, Float64Array>();
  const column = (name: string): Float64Array | undefined => {
    const id = datatypeKey(name);
    if (id === undefined) return undefined;
    let channel = channels.get(id);
    if (!channel) {
      if ((channels.size + 1) * n > ACTIVITY_LIMITS.maxDatastreamCells) {
        const limit = ACTIVITY_LIMITS.maxDatastreamCells.toLocaleString('en');
        throw invalid([{ path, message: `is too large: samples × datatypes must stay within ${limit}` }]);
      }
      channel = new Float64Array(n).fill(Number.NaN);
      channels.set(id, channel);
    }
    return channel;
  };
  // A recording names the same datatypes in every sample: the previous sample's columns are
  // reused while the member names are the same, in the same order.
  let names: string[] = [];
  let columns: (Float64Array | undefined)[] = [];
  for (let i = 0; i < n && !problems.full; i++) {
    const key = keys[i] as string;
    const t = elapsedKey(key);
    if (t === undefined) {
      problems.add(`${path}.${key}`, ELAPSED_MESSAGE);
      continue;
    }
    elapsed[i] = t;
    const sample = json[key];
    if (!isObject(sample)) {
      problems.add(`${path}.${key}`, 'must be an object of datatype id to number');
      continue;
    }
    const these = Object.keys(sample);
    let same = these.length === names.length;
    for (let j = 0; same && j < these.length; j++) same = these[j] === names[j];
    if (!same) {
      names = these;
      columns = these.map(column);
    }
    for (let j = 0; j < these.length; j++) {
      const name = these[j] as string;
      const value = sample[name];
      const channel = columns[j];
      if (channel === undefined)
        problems.add(`${path}.${key}.${name}`, 'must be keyed by a datatype id (a positive integer)');
      else if (typeof value !== 'number' || !Number.isFinite(value))
        problems.add(`${path}.${key}.${name}`, 'must be a number');
      else channel[i] = value;
    }
  }
  if (problems.list.length) throw invalid(problems.list);
  return { elapsed, channels };
}

/** `locations`: elapsed second (string key) to `{latitude, longitude, elevation}`. */
export function trackFromJson(json: Record<string, unknown> | null | undefined, path = 'body.locations'): Track {
  if (!json) return emptyTrack();
  const problems = new Problems();
  const keys = Object.keys(json); // ascending, as in datastreamFromJson
  const n = keys.length;
  if (n > ACTIVITY_LIMITS.maxTrackPoints) throw invalid([{ path, message: tooManyPoints(n) }]);
  const track: Track = {
    elapsed: new Int32Array(n),
    latitude: new Float64Array(n),
    longitude: new Float64Array(n),
    elevation: new Float64Array(n),
  };
  for (let i = 0; i < n && !problems.full; i++) {
    const key = keys[i] as string;
    const t = elapsedKey(key);
    if (t === undefined) {
      problems.add(`${path}.${key}`, ELAPSED_MESSAGE);
      continue;
    }
    track.elapsed[i] = t;
    const point = json[key];
    if (!isObject(point)) {
      problems.add(`${path}.${key}`, 'must be an object {latitude, longitude, elevation}');
      continue;
    }
    const { latitude, longitude, elevation } = point;
    if (typeof latitude !== 'number' || !(latitude >= -90 && latitude <= 90))
      problems.add(`${path}.${key}.latitude`, 'must be a number from -90 to 90');
    else track.latitude[i] = latitude;
    if (typeof longitude !== 'number' || !(longitude >= -180 && longitude <= 180))
      problems.add(`${path}.${key}.longitude`, 'must be a number from -180 to 180');
    else track.longitude[i] = longitude;
    if (elevation === undefined || elevation === null) track.elevation[i] = Number.NaN;
    else if (typeof elevation !== 'number' || !Number.isFinite(elevation))
      problems.add(`${path}.${key}.elevation`, 'must be a number (metres) or null');
    else track.elevation[i] = elevation;
    for (const member in point)
      if (member !== 'latitude' && member !== 'longitude' && member !== 'elevation')
        problems.add(`${path}.${key}.${member}`, 'is not a member of a location (latitude, longitude, elevation)');
  }
  if (problems.list.length) throw invalid(problems.list);
  return track;
}
