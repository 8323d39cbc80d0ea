import { pauses } from '../../runtime/paced-stream.ts';
import { type ActivityContent, DATATYPE } from '../activities/data.ts';
import { type LapRange as Lap, lapRanges } from '../activities/laps.ts';
import { cleanName } from './activity-builder.ts';
import { DIGITS, type ExportSamples, exportSampleSteps } from './export-samples.ts';
import { tcxSportOf } from './file-sports.ts';
import { PLAUSIBLE } from './limits.ts';
import { CHUNK_CHARS, escapeXml, fixed, isoSecond, joinChunks } from './xml-output.ts';

/**
 * TCX (Training Center Database v2) of an activity: one Activity (Sport Running, Biking or
 * Other), its laps cut after each lap marker (datatype 20), and a Trackpoint per second of the
 * datastream or the track: Time, Position, AltitudeMeters, DistanceMeters, HeartRateBpm,
 * Cadence, and ActivityExtension v2 TPX Speed (m/s) and Watts. Each lap carries what the schema
 * requires (TotalTimeSeconds, DistanceMeters, Calories, Intensity, TriggerMethod) and what the
 * samples give (MaximumSpeed, heart rate, cadence), all computed from the values as printed.
 * The activity's calories are shared among the laps by duration; the name goes in <Notes>.
 */

const HEADER =
  '<?xml version="1.0" encoding="UTF-8"?>\n' +
  '<TrainingCenterDatabase xmlns="http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2"' +
  ' xmlns:ns3="http://www.garmin.com/xmlschemas/ActivityExtension/v2"' +
  ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"' +
  ' xsi:schemaLocation="http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2 http://www.garmin.com/xmlschemas/TrainingCenterDatabasev2.xsd' +
  ' http://www.garmin.com/xmlschemas/ActivityExtension/v2 http://www.garmin.com/xmlschemas/ActivityExtensionv2.xsd">\n';

/** Laps cut after each marked sample (activities/laps.ts, as the laps of the API); the last one runs to the activity's end. */
export const lapsOf = (s: ExportSamples, duration: number): Lap[] =>
  lapRanges(s.elapsed, (i) => s.lap[i] === 1, duration);

/**
 * `total` (an integer count of units) shared by weights, largest remainder first, ties to the
 * earlier lap: deterministic, and the parts add up to the total exactly.
 */
export function splitTotal(total: number, weights: number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  if (!weights.length) return [];
  if (sum <= 0) return weights.map((_, i) => (i === weights.length - 1 ? total : 0));
  const exact = weights.map((w) => (total * w) / sum);
  const parts = exact.map(Math.floor);
  let rest = total - parts.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => [x - Math.floor(x), i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (const [, i] of order) {
    if (rest <= 0) break;
    parts[i] = (parts[i] as number) + 1;
    rest--;
  }
  return parts;
}

/**
 * Lap calories are an unsignedShort; one file holds at most that many (more is a unit mistake).
 * Totals an importer would refuse as implausible are written as 0, so a re-import reads them the same.
 */
const MAX_CALORIES = 65_535;

/** `value` in integer units (1 kcal, 1 cm), or 0 when absent or beyond `max`. */
function plausibleTotal(value: number | undefined, unitsPerOne: number, max: number): number {
  const units = Math.round((value ?? 0) * unitsPerOne);
  return units > 0 && units <= max ? units : 0;
}

interface LapFigures {
  distance: number;
  maxSpeed: number;
  avgHr: number;
  maxHr: number;
  avgCadence: number;
}

function figures(s: ExportSamples, lap: Lap, previousDistance: number): LapFigures & { endDistance: number } {
  let endDistance = previousDistance;
  let maxSpeed = Number.NaN;
  let hrSum = 0;
  let hrCount = 0;
  let maxHr = Number.NaN;
  let cadSum = 0;
  let cadCount = 0;
  for (let i = lap.from; i < lap.to; i++) {
    const d = s.distance[i] as number;
    if (!Number.isNaN(d)) endDistance = d;
    const v = s.speed[i] as number;
    if (!(v <= maxSpeed)) maxSpeed = Number.isNaN(v) ? maxSpeed : v;
    const hr = s.heartRate[i] as number;
    if (!Number.isNaN(hr)) {
      hrSum += hr;
      hrCount++;
      if (!(hr <= maxHr)) maxHr = hr;
    }
    const c = s.cadence[i] as number;
    if (!Number.isNaN(c) && c > 0) {
      cadSum += c;
      cadCount++;
    }
  }
  return {
    endDistance,
    distance: Math.max(0, Number(fixed(endDistance - previousDistance, DIGITS.distance))),
    maxSpeed,
    avgHr: hrCount ? Math.round(hrSum / hrCount) : Number.NaN,
    maxHr,
    avgCadence: cadCount ? Math.min(254, Math.round(cadSum / cadCount)) : Number.NaN,
  };
}

function trackpoint(s: ExportSamples, i: number, start: number): string {
  let out = `<Trackpoint><Time>${isoSecond(start + (s.elapsed[i] as number) * 1000)}</Time>`;
  const lat = s.latitude[i] as number;
  if (!Number.isNaN(lat)) {
    out += `<Position><LatitudeDegrees>${fixed(lat, DIGITS.position)}</LatitudeDegrees><LongitudeDegrees>${fixed(
      s.longitude[i] as number,
      DIGITS.position,
    )}</LongitudeDegrees></Position>`;
  }
  const ele = s.elevation[i] as number;
  if (!Number.isNaN(ele)) out += `<AltitudeMeters>${fixed(ele, DIGITS.elevation)}</AltitudeMeters>`;
  const d = s.distance[i] as number;
  if (!Number.isNaN(d)) out += `<DistanceMeters>${fixed(d, DIGITS.distance)}</DistanceMeters>`;
  const hr = s.heartRate[i] as number;
  if (!Number.isNaN(hr)) out += `<HeartRateBpm><Value>${hr}</Value></HeartRateBpm>`;
  const cad = s.cadence[i] as number;
  if (!Number.isNaN(cad)) out += `<Cadence>${cad}</Cadence>`;
  const speed = s.speed[i] as number;
  const power = s.power[i] as number;
  if (!Number.isNaN(speed) || !Number.isNaN(power)) {
    out += '<Extensions><ns3:TPX>';
    if (!Number.isNaN(speed)) out += `<ns3:Speed>${fixed(speed, DIGITS.speed)}</ns3:Speed>`;
    if (!Number.isNaN(power)) out += `<ns3:Watts>${power}</ns3:Watts>`;
    out += '</ns3:TPX></Extensions>';
  }
  return `${out}</Trackpoint>\n`;
}

export function* tcxChunks(content: ActivityContent): Generator<string> {
  const s = yield* pauses(exportSampleSteps(content, false));
  const start = Math.round(content.startdate.getTime() / 1000) * 1000;
  const laps = lapsOf(s, content.duration);
  const weights = laps.map((l) => l.end - l.start);
  const calories = splitTotal(plausibleTotal(content.summaries.get(DATATYPE.CALORIES), 1, MAX_CALORIES), weights);
  const hasDistance = s.distance.some((d) => !Number.isNaN(d));
  // Without a distance stream, the summary's distance is shared like the calories (in centimetres).
  const maxCentimetres = PLAUSIBLE.speed.max * Math.max(laps[laps.length - 1]?.end ?? 0, 1) * 100;
  const centimetres = hasDistance
    ? undefined
    : splitTotal(plausibleTotal(content.summaries.get(DATATYPE.DISTANCE), 100, maxCentimetres), weights);

  let out = `${HEADER} <Activities>\n  <Activity Sport="${tcxSportOf(content.sportId)}">\n   <Id>${isoSecond(start)}</Id>\n`;
  let previousDistance = 0;
  for (const [k, lap] of laps.entries()) {
    const f = figures(s, lap, previousDistance);
    previousDistance = f.endDistance;
    const distance = centimetres ? (centimetres[k] as number) / 100 : f.distance;
    out += `   <Lap StartTime="${isoSecond(start + lap.start * 1000)}"><TotalTimeSeconds>${lap.end - lap.start}</TotalTimeSeconds>`;
    out += `<DistanceMeters>${fixed(distance, DIGITS.distance)}</DistanceMeters>`;
    if (!Number.isNaN(f.maxSpeed)) out += `<MaximumSpeed>${fixed(f.maxSpeed, DIGITS.speed)}</MaximumSpeed>`;
    out += `<Calories>${calories[k]}</Calories>`;
    if (!Number.isNaN(f.avgHr)) out += `<AverageHeartRateBpm><Value>${f.avgHr}</Value></AverageHeartRateBpm>`;
    if (!Number.isNaN(f.maxHr)) out += `<MaximumHeartRateBpm><Value>${f.maxHr}</Value></MaximumHeartRateBpm>`;
    out += '<Intensity>Active</Intensity>';
    if (!Number.isNaN(f.avgCadence)) out += `<Cadence>${f.avgCadence}</Cadence>`;
    out += '<TriggerMethod>Manual</TriggerMethod>\n';
    if (lap.to > lap.from) {
      out += '    <Track>\n';
      for (let i = lap.from; i < lap.to; i++) {
        out += `     ${trackpoint(s, i, start)}`;
        if (out.length >= CHUNK_CHARS) {
          yield out;
          out = '';
        }
      }
      out += '    </Track>\n';
    }
    out += '   </Lap>\n';
  }
  const name = cleanName(content.name ?? undefined);
  if (name !== null) out += `   <Notes>${escapeXml(name)}</Notes>\n`;
  yield `${out}  </Activity>\n </Activities>\n</TrainingCenterDatabase>\n`;
}

export const exportTcx = (content: ActivityContent): string => joinChunks(tcxChunks(content));
