import { type ActivityContent, DATATYPE, type Datastream, type Track } from '../activities/data.ts';
import { isCycling } from './file-sports.ts';
import { ImportError } from './import-error.ts';
import { EARLIEST_START, IMPORT_LIMITS, LATEST_START, PLAUSIBLE } from './limits.ts';
import { type PointCollector, VALUE_FIELDS, type ValueField } from './point-collector.ts';
import { computeSummaries, type DeclaredTotals } from './summaries.ts';
import { cumulativeDistance } from './track-distance.ts';
import { XML_INVALID } from './xml-output.ts';

/**
 * What every importer does once it has read its file: points in file order (epoch ms and
 * values in the files' units) become an ActivityContent. The rules, in one place:
 * - times are rounded to the second; elapsed = rounded time - rounded start;
 * - points sharing a second merge into one sample, the first value of each field winning;
 * - a point earlier than the sample before it is skipped (a clock jump), as is a point without time;
 * - implausible values (limits.ts PLAUSIBLE) and (0, 0) positions are dropped;
 * - without distances in the file, the distance stream is measured along the track, a jump
 *   between two tracks or segments adding nothing (docs/tracking-files.md, "Distance");
 * - a lap end marks (datatype 20 = 1) the last sample at or before it.
 * Whatever is skipped or dropped is counted in `warnings`.
 */

export interface BuildInput {
  /** GPX, TCX or FIT, for the messages. */
  format: string;
  sportId: number;
  name: string | null;
  /** When the file says the activity started (lap or session start), epoch ms; used when not after the first point. */
  declaredStart?: number;
  /** When the file says the activity ended (epoch ms), for a duration beyond the last point. */
  declaredEnd?: number;
  declared: DeclaredTotals;
}

export interface BuiltActivity {
  content: ActivityContent;
  warnings: string[];
}

const seconds = (ms: number) => Math.round(ms / 1000);

/**
 * A file's name as an activity name: without control characters or what XML cannot hold (so an
 * exported name reads back the same), spaces collapsed, trimmed, at most 255 characters.
 */
export function cleanName(name: string | undefined): string | null {
  if (name === undefined) return null;
  const clean = name
    .replace(XML_INVALID, '')
    .replace(/\p{Cc}+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (!clean) return null;
  const chars = Array.from(clean);
  return chars.length > IMPORT_LIMITS.maxNameLength ? chars.slice(0, IMPORT_LIMITS.maxNameLength).join('') : clean;
}

export function buildActivity(points: PointCollector, input: BuildInput): BuiltActivity {
  const warnings: string[] = [];
  if (points.untimed) warnings.push(`${points.untimed} point(s) without a time were skipped`);

  // Samples: one per second, in file order; earlier seconds than the last kept one are skipped.
  const sampleOf: number[] = []; // point index -> sample index (-1: skipped)
  const secs: number[] = [];
  let backwards = 0;
  for (let i = 0; i < points.times.length; i++) {
    const s = seconds(points.times[i] as number);
    const last = secs[secs.length - 1];
    if (last === undefined || s > last) {
      secs.push(s);
    } else if (s < last) {
      backwards++;
      sampleOf.push(-1);
      continue;
    }
    sampleOf.push(secs.length - 1);
  }
  if (backwards) warnings.push(`${backwards} point(s) earlier than the point before them were skipped`);
  const n = secs.length;
  if (n > IMPORT_LIMITS.maxSamples) {
    throw new ImportError(
      'over-limit',
      `the file holds ${n} distinct seconds of data; an activity holds at most ${IMPORT_LIMITS.maxSamples} samples (ACTIVITY_LIMITS.maxSamples: 48 hours at 1 Hz)`,
    );
  }
  if (n === 1 && points.size > 1) {
    const at = new Date((secs[0] as number) * 1000).toISOString();
    throw new ImportError(
      'no-activity',
      `the ${input.format} file's ${points.size} points all carry the same time (${at}): the recording has no timeline to make an activity of`,
    );
  }

  const merged = {} as Record<ValueField, Float64Array>;
  for (const f of VALUE_FIELDS) {
    const out = new Float64Array(n).fill(Number.NaN);
    const column = points.columns[f];
    for (let i = 0; i < column.length; i++) {
      const s = sampleOf[i] as number;
      if (s >= 0 && Number.isNaN(out[s] as number)) out[s] = column[i] as number;
    }
    merged[f] = out;
  }
  // A position is the pair: a sample keeps the first point's pair that has both.
  const lat = new Float64Array(n).fill(Number.NaN);
  const lon = new Float64Array(n).fill(Number.NaN);
  for (let i = 0; i < points.times.length; i++) {
    const s = sampleOf[i] as number;
    const la = points.columns.latitude[i] as number;
    const lo = points.columns.longitude[i] as number;
    if (s >= 0 && Number.isNaN(lat[s] as number) && !Number.isNaN(la) && !Number.isNaN(lo)) {
      lat[s] = la;
      lon[s] = lo;
    }
  }
  dropImplausible(lat, lon, merged, warnings);

  const firstSec = n ? (secs[0] as number) : undefined;
  const declaredStart = input.declaredStart === undefined ? Number.NaN : seconds(input.declaredStart);
  const start =
    firstSec === undefined
      ? declaredStart
      : !Number.isNaN(declaredStart) &&
          declaredStart <= firstSec &&
          firstSec - declaredStart <= IMPORT_LIMITS.maxDurationSeconds
        ? declaredStart
        : firstSec;
  if (Number.isNaN(start)) {
    throw new ImportError('no-activity', `the ${input.format} file has no timed point and no start time`);
  }
  if (start * 1000 < EARLIEST_START || start * 1000 >= LATEST_START) {
    throw new ImportError(
      'no-activity',
      `the activity would start on ${new Date(start * 1000).toISOString()}; activities start between 1900 and 2100`,
    );
  }
  const elapsed = Int32Array.from(secs, (s) => s - start);
  const lastElapsed = n ? (elapsed[n - 1] as number) : 0;
  if (lastElapsed > IMPORT_LIMITS.maxDurationSeconds) {
    throw new ImportError(
      'over-limit',
      `the recording spans ${lastElapsed} s, more than the ${IMPORT_LIMITS.maxDurationSeconds} s (7 days) an activity may last`,
    );
  }
  const declaredEnd = input.declaredEnd === undefined ? Number.NaN : seconds(input.declaredEnd) - start;
  const duration =
    !Number.isNaN(declaredEnd) && declaredEnd > lastElapsed && declaredEnd <= IMPORT_LIMITS.maxDurationSeconds
      ? declaredEnd
      : lastElapsed;

  const track = trackOf(elapsed, lat, lon, merged.elevation);
  const stretches = breakSamples(points.breaks, sampleOf);
  const trackBreaks = breaksOnTrack(stretches, lat);
  const cadenceDatatype = isCycling(input.sportId) ? DATATYPE.RPM_CURRENT : DATATYPE.CADENCE_CURRENT;
  const datastream: Datastream = { elapsed, channels: new Map() };
  const setChannel = (datatype: number, values: Float64Array) => {
    if (values.some((v) => !Number.isNaN(v))) datastream.channels.set(datatype, values);
  };
  setChannel(DATATYPE.HR_CURRENT, merged.heartRate);
  setChannel(DATATYPE.DISTANCE, distanceChannel(merged.distance, elapsed, track, trackBreaks, warnings));
  setChannel(
    DATATYPE.SPEED_CURRENT,
    merged.speed.map((v) => v * 3600),
  );
  setChannel(cadenceDatatype, merged.cadence);
  setChannel(DATATYPE.ELEVATION_CURRENT, merged.elevation);
  setChannel(DATATYPE.POWER_CURRENT, merged.power);
  setChannel(DATATYPE.LAP, lapMarkers(points.lapEnds, secs));

  const declared = plausibleDeclared(input.declared, duration, warnings);
  return {
    content: {
      sportId: input.sportId,
      name: input.name,
      startdate: new Date(start * 1000),
      duration,
      summaries: computeSummaries(datastream, duration, declared, cadenceDatatype, stretches),
      datastream,
      track,
    },
    warnings,
  };
}

const LABELS: Record<keyof typeof PLAUSIBLE, [ValueField, string]> = {
  heartRate: ['heartRate', 'bpm'],
  cadence: ['cadence', '/min'],
  power: ['power', 'W'],
  speed: ['speed', 'm/s'],
  elevation: ['elevation', 'm'],
  distance: ['distance', 'm'],
};

function dropImplausible(
  lat: Float64Array,
  lon: Float64Array,
  merged: Record<ValueField, Float64Array>,
  warnings: string[],
): void {
  let positions = 0;
  for (let i = 0; i < lat.length; i++) {
    const la = lat[i] as number;
    const lo = lon[i] as number;
    if (Number.isNaN(la)) continue;
    if (!(la >= -90 && la <= 90 && lo >= -180 && lo <= 180) || (la === 0 && lo === 0)) {
      lat[i] = Number.NaN;
      lon[i] = Number.NaN;
      positions++;
    } else if (lo === 180) {
      lon[i] = -180; // the same meridian; GPX and TCX both exclude +180
    }
  }
  if (positions) warnings.push(`${positions} position(s) outside the globe or at (0, 0) were ignored`);
  for (const [key, [field, unit]] of Object.entries(LABELS)) {
    const { min, max } = PLAUSIBLE[key as keyof typeof PLAUSIBLE];
    const values = merged[field];
    let dropped = 0;
    for (let i = 0; i < values.length; i++) {
      const v = values[i] as number;
      if (!Number.isNaN(v) && !(v >= min && v <= max)) {
        values[i] = Number.NaN;
        dropped++;
      }
    }
    if (dropped) warnings.push(`${dropped} ${field} value(s) outside ${min}..${max} ${unit} were ignored`);
  }
}

function trackOf(elapsed: Int32Array, lat: Float64Array, lon: Float64Array, elevation: Float64Array): Track {
  const index: number[] = [];
  for (let i = 0; i < lat.length; i++) if (!Number.isNaN(lat[i] as number)) index.push(i);
  return {
    elapsed: Int32Array.from(index, (i) => elapsed[i] as number),
    latitude: Float64Array.from(index, (i) => lat[i] as number),
    longitude: Float64Array.from(index, (i) => lon[i] as number),
    elevation: Float64Array.from(index, (i) => elevation[i] as number),
  };
}

/** The samples that begin a new track or segment (the first sample holding a point at or after each break). */
function breakSamples(breaks: number[], sampleOf: number[]): number[] {
  const out: number[] = [];
  for (const point of breaks) {
    let s = -1;
    for (let i = point; i < sampleOf.length && s < 0; i++) s = sampleOf[i] as number;
    if (s < 0) continue;
    // A point merged into the sample of a point before the break begins no stretch of its own.
    let before = -1;
    for (let i = point - 1; i >= 0 && before < 0; i--) before = sampleOf[i] as number;
    if (s === before) s++;
    if (s > 0 && s !== out.at(-1)) out.push(s);
  }
  return out;
}

/** The track points (indexes into trackOf's track) at or after each break sample, when a point came before. */
function breaksOnTrack(samples: number[], lat: Float64Array): Set<number> {
  const out = new Set<number>();
  if (!samples.length) return out;
  const trackIndex = new Int32Array(lat.length + 1);
  let k = 0;
  for (let s = 0; s < lat.length; s++) {
    trackIndex[s] = k;
    if (!Number.isNaN(lat[s] as number)) k++;
  }
  trackIndex[lat.length] = k;
  for (const s of samples) {
    const t = trackIndex[s] as number;
    if (t > 0 && t < k) out.add(t);
  }
  return out;
}

/**
 * The file's distances, cumulative: a value below the one before is dropped, and a stream whose
 * average speed is beyond plausible (a unit mistake) is dropped whole. Without any, the track's.
 */
function distanceChannel(
  values: Float64Array,
  elapsed: Int32Array,
  track: Track,
  trackBreaks: ReadonlySet<number>,
  warnings: string[],
): Float64Array {
  let previous = Number.NEGATIVE_INFINITY;
  let decreasing = 0;
  let first = -1;
  let last = -1;
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (Number.isNaN(v)) continue;
    if (v < previous) {
      values[i] = Number.NaN;
      decreasing++;
      continue;
    }
    previous = v;
    if (first < 0) first = i;
    last = i;
  }
  if (decreasing) warnings.push(`${decreasing} distance value(s) lower than the one before were ignored`);
  if (first >= 0 && last > first) {
    const span = (elapsed[last] as number) - (elapsed[first] as number);
    const speed = ((values[last] as number) - (values[first] as number)) / Math.max(span, 1);
    if (speed > PLAUSIBLE.speed.max) {
      warnings.push(
        `the distances grow by ${Math.round(speed * 3.6)} km/h on average, beyond any sport: they were ignored`,
      );
      values.fill(Number.NaN);
      first = -1;
    }
  }
  if (first >= 0 || track.elapsed.length < 2) return values;
  const measured = cumulativeDistance(track, trackBreaks);
  const out = new Float64Array(values.length).fill(Number.NaN);
  let t = 0;
  for (let i = 0; i < elapsed.length && t < track.elapsed.length; i++) {
    if (elapsed[i] === track.elapsed[t]) out[i] = measured[t++] as number;
  }
  return out;
}

/** 1 on the last sample at or before each lap end, NaN elsewhere. */
function lapMarkers(lapEnds: number[], secs: number[]): Float64Array {
  const out = new Float64Array(secs.length).fill(Number.NaN);
  for (const end of lapEnds) {
    const s = seconds(end);
    let lo = 0;
    let hi = secs.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if ((secs[mid] as number) <= s) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (found >= 0) out[found] = 1;
  }
  return out;
}

/** The file's own totals, less those a unit mistake makes impossible. */
function plausibleDeclared(declared: DeclaredTotals, duration: number, warnings: string[]): DeclaredTotals {
  const out: DeclaredTotals = {};
  const keep = (key: keyof DeclaredTotals, min: number, max: number) => {
    const v = declared[key];
    if (v !== undefined && Number.isFinite(v) && v >= min && v <= max) out[key] = v;
  };
  const maxDistance = PLAUSIBLE.speed.max * Math.max(duration, 1);
  keep('distance', 0, maxDistance);
  if (declared.distance !== undefined && out.distance === undefined) {
    warnings.push(
      `the file's total distance (${declared.distance} m) is beyond plausible for its duration and was ignored`,
    );
  }
  keep('calories', 0, 100_000);
  keep('ascent', 0, 100_000);
  keep('descent', 0, 100_000);
  keep('heartRateAvg', PLAUSIBLE.heartRate.min, PLAUSIBLE.heartRate.max);
  keep('heartRateMax', PLAUSIBLE.heartRate.min, PLAUSIBLE.heartRate.max);
  keep('speedMax', 0, PLAUSIBLE.speed.max);
  keep('powerAvg', 0, PLAUSIBLE.power.max);
  keep('powerMax', 0, PLAUSIBLE.power.max);
  keep('cadenceAvg', 0, PLAUSIBLE.cadence.max);
  keep('cadenceMax', 0, PLAUSIBLE.cadence.max);
  return out;
}
