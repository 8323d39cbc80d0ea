import { cumulativeDistance } from '../formats/track-distance.ts';
import { type ActivityContent, DATATYPE } from './data.ts';

/**
 * Moving time and pauses (docs/tracking-activities.md, "Moving time and pauses"). The rule is
 * gpxpy's `get_moving_data`, which FitTrackee computes its moving time with: the samples are cut
 * into intervals, and an interval whose speed (distance covered / its seconds) is at or below the
 * sport family's stopped speed is stopped time. To that we add a hold: stopped intervals in a row
 * make a pause only when they last `minPause` seconds or more, so a GPS wobble or a slowdown at
 * a turn stays moving time. Strava's running threshold (slower than a 30-minute mile is resting)
 * is the running family's stopped speed.
 */

export interface MovingRule {
  family: string;
  /** Metres per second: an interval at or below it is stopped. */
  stoppedSpeed: number;
  /** Seconds: shorter stretches of stopped intervals are not pauses. */
  minPause: number;
}

/**
 * The families and their sports (ids of the seeded referential; a child sport belongs to its
 * parent's family unless it is listed itself). Sports in no family (indoor, team and racket
 * sports, swimming...) keep their elapsed time: there, as for Strava's elapsed-time sports, a
 * slow stretch is part of the activity. Pool swims are left out on purpose: their distance moves
 * by whole lengths, so every length would look like a stop.
 */
export const MOVING_FAMILIES: readonly { sports: readonly number[]; rule: MovingRule }[] = [
  // Running, the treadmill: Strava's rule, 1609.344 m in 30 minutes (0.894 m/s, 3.2 km/h).
  { sports: [121, 395], rule: { family: 'running', stoppedSpeed: 1609.344 / 1800, minPause: 5 } },
  // Walking, Nordic walking, hiking, mountaineering, snow-shoeing: a steep climb can be slower than
  // a run's threshold and still be moving; 1 km/h is FitTrackee's default stopped speed.
  { sports: [113, 114, 168, 153, 173], rule: { family: 'walking', stoppedSpeed: 1 / 3.6, minPause: 5 } },
  // Bicycles, road cycling, mountain biking, indoor bikes: nobody rides below 3.6 km/h for long.
  { sports: [381, 385, 388, 110, 401], rule: { family: 'cycling', stoppedSpeed: 1, minPause: 5 } },
  // Rowing, canoeing and kayaking, the rowing machine, stand up paddle boarding.
  { sports: [263, 265, 398, 400], rule: { family: 'paddling', stoppedSpeed: 0.5, minPause: 5 } },
  { sports: [367], rule: { family: 'skating', stoppedSpeed: 1, minPause: 5 } },
  // Alternative Nordic skiing and Nordic skating.
  { sports: [183, 184], rule: { family: 'nordic-skiing', stoppedSpeed: 0.5, minPause: 5 } },
];

/** The rule of a sport from its ancestry (the sport, then its parent...): the nearest listed sport decides. */
export function movingRuleOf(ancestry: readonly number[]): MovingRule | null {
  for (const sport of ancestry) for (const f of MOVING_FAMILIES) if (f.sports.includes(sport)) return f.rule;
  return null;
}

export interface Pause {
  /** Elapsed second the pause starts at. */
  start: number;
  /** Seconds. */
  duration: number;
}

/** The activity columns of migration 0062. */
export interface MovingFields {
  moving_time: number;
  /** At most MAX_LISTED_PAUSES, the longest, in time order; all of them make `duration − moving_time`. */
  pauses: Pause[];
  /** m/h (the unit of the speed datatypes), over the moving time; null without a distance. */
  moving_speed_avg: number | null;
  /** Seconds per kilometre over the moving time; null without a distance. */
  moving_pace: number | null;
}

/** Pauses listed on an activity; the total of all of them is always `duration − movingTime`. */
export const MAX_LISTED_PAUSES = 100;

const round2 = (n: number) => Math.round(n * 100) / 100;

/** Where the speed comes from: the distance channel, else the speed channel, else the GPS track. */
interface SpeedSource {
  /** Elapsed seconds of the samples that have a value, ascending. */
  at: Float64Array;
  /** Speed (m/s) of the interval that ends at each sample (index 0 unused). */
  speed: Float64Array;
  /** The distance the source measures, when it does (metres). */
  distance: number | undefined;
}

function finiteSamples(elapsed: ArrayLike<number>, values: Float64Array): { at: Float64Array; v: Float64Array } {
  let n = 0;
  for (const v of values) if (Number.isFinite(v)) n++;
  const at = new Float64Array(n);
  const v = new Float64Array(n);
  let k = 0;
  for (let i = 0; i < values.length; i++) {
    const value = values[i] as number;
    if (!Number.isFinite(value)) continue;
    at[k] = elapsed[i] as number;
    v[k++] = value;
  }
  return { at, v };
}

function fromDistance(at: Float64Array, distance: Float64Array): SpeedSource {
  const speed = new Float64Array(at.length);
  let max = 0;
  for (let i = 0; i < at.length; i++) {
    if ((distance[i] as number) > max) max = distance[i] as number;
    if (i === 0) continue;
    const dt = (at[i] as number) - (at[i - 1] as number);
    speed[i] = dt > 0 ? ((distance[i] as number) - (distance[i - 1] as number)) / dt : 0;
  }
  return { at, speed, distance: at.length ? max : undefined };
}

function speedSource(content: Pick<ActivityContent, 'datastream' | 'track'>): SpeedSource | undefined {
  const { datastream, track } = content;
  const distance = datastream.channels.get(DATATYPE.DISTANCE);
  if (distance) {
    const { at, v } = finiteSamples(datastream.elapsed, distance);
    if (at.length >= 2) return fromDistance(at, v);
  }
  const speed = datastream.channels.get(DATATYPE.SPEED_CURRENT);
  if (speed) {
    const { at, v } = finiteSamples(datastream.elapsed, speed);
    // m/h, as the referential's unit says; the speed at a sample is that of the interval it ends.
    if (at.length >= 2) return { at, speed: v.map((s) => s / 3600), distance: undefined };
  }
  if (track.elapsed.length >= 2) return fromDistance(Float64Array.from(track.elapsed), cumulativeDistance(track));
  return undefined;
}

/** Stopped stretches of at least `minPause` seconds, clipped to [0, duration], in time order. */
function findPauses(source: SpeedSource, rule: MovingRule, duration: number): Pause[] {
  const pauses: Pause[] = [];
  const { at, speed } = source;
  let start = -1;
  const close = (end: number) => {
    const from = Math.max(0, start);
    const to = Math.min(duration, end);
    if (to - from >= rule.minPause) pauses.push({ start: from, duration: to - from });
    start = -1;
  };
  for (let i = 1; i < at.length; i++) {
    const stopped = (speed[i] as number) <= rule.stoppedSpeed;
    if (stopped && start < 0) start = at[i - 1] as number;
    else if (!stopped && start >= 0) close(at[i - 1] as number);
  }
  if (start >= 0) close(at[at.length - 1] as number);
  return pauses;
}

/** The longest `max` pauses, back in time order (ties: the earlier one). */
function longest(pauses: Pause[], max: number): Pause[] {
  if (pauses.length <= max) return pauses;
  const kept = new Set(
    pauses
      .map((p, i) => ({ p, i }))
      .sort((a, b) => b.p.duration - a.p.duration || a.i - b.i)
      .slice(0, max)
      .map((x) => x.i),
  );
  return pauses.filter((_, i) => kept.has(i));
}

/**
 * Moving time, pauses and the averages over moving time of an activity under `rule` (null: the
 * sport keeps its elapsed time). Without samples to tell speed from, nothing shows a pause: the
 * moving time is the duration, as Strava and FitTrackee give a manual entry. The averages take
 * the activity's distance (its summary, else what the samples measured).
 */
export function movingFields(
  content: Pick<ActivityContent, 'duration' | 'summaries' | 'datastream' | 'track'>,
  rule: MovingRule | null,
): MovingFields {
  const source = speedSource(content);
  const all = rule && source ? findPauses(source, rule, content.duration) : [];
  let paused = 0;
  for (const p of all) paused += p.duration;
  const movingTime = Math.max(0, content.duration - paused);
  const declared = content.summaries.get(DATATYPE.DISTANCE);
  const distance = declared !== undefined && Number.isFinite(declared) ? declared : source?.distance;
  const moves = distance !== undefined && distance > 0 && movingTime > 0;
  return {
    moving_time: movingTime,
    pauses: longest(all, MAX_LISTED_PAUSES),
    moving_speed_avg: moves ? round2((distance / movingTime) * 3600) : null,
    moving_pace: moves ? round2(movingTime / (distance / 1000)) : null,
  };
}
