import { buildActivity, cleanName } from './activity-builder.ts';
import { sportFromTcx } from './file-sports.ts';
import { ImportError } from './import-error.ts';
import { type ImportedActivity, type ImportOptions, resolveSport } from './import-options.ts';
import { PointCollector } from './point-collector.ts';
import type { DeclaredTotals } from './summaries.ts';
import {
  attr,
  child,
  children,
  childText,
  dateTime,
  decimal,
  decodeXml,
  parseXml,
  rootElementName,
  type XmlNode,
} from './xml-input.ts';

/**
 * Garmin Training Center Database v2 (TCX). Every <Activity>'s laps in file order make one
 * activity (the first one's Sport); each lap's last trackpoint ends a lap (datatype 20). Per
 * trackpoint: Time, Position, AltitudeMeters, DistanceMeters, HeartRateBpm, Cadence, and the
 * ActivityExtension v2 TPX Speed (m/s), Watts and RunCadence. The laps' own totals (distance,
 * calories, heart rate, top speed, LX watts) fill what the trackpoints lack; a TCX of laps
 * without trackpoints imports as a summary. <Notes> is the activity's name (TCX has no name).
 * Distances that restart from 0 in each lap are made cumulative (lapDistanceOffsets). Several
 * <Track>s of a lap are one recording cut by pauses (not a jump to elsewhere, unlike GPX tracks).
 */

const ARRAY_TAGS = new Set(['Activity', 'Lap', 'Track', 'Trackpoint']);

const bpmOf = (node: XmlNode | undefined, name: string) => decimal(childText(child(node, name), 'Value'));

function addTrackpoint(points: PointCollector, tp: XmlNode, distanceOffset: number): number {
  const position = child(tp, 'Position');
  const tpx = child(child(tp, 'Extensions'), 'TPX');
  const cadence = decimal(childText(tp, 'Cadence'));
  const time = dateTime(childText(tp, 'Time'));
  points.add(time, {
    latitude: decimal(childText(position, 'LatitudeDegrees')),
    longitude: decimal(childText(position, 'LongitudeDegrees')),
    elevation: decimal(childText(tp, 'AltitudeMeters')),
    distance: decimal(childText(tp, 'DistanceMeters')) + distanceOffset,
    heartRate: bpmOf(tp, 'HeartRateBpm'),
    cadence: Number.isNaN(cadence) ? decimal(childText(tpx, 'RunCadence')) : cadence,
    speed: decimal(childText(tpx, 'Speed')),
    power: decimal(childText(tpx, 'Watts')),
  });
  return time;
}

/** Sums, maxima and time-weighted averages of the laps' own figures. */
function lapTotals(laps: XmlNode[]): DeclaredTotals {
  let distance: number | undefined;
  let calories: number | undefined;
  const maxOf = (current: number | undefined, v: number) =>
    Number.isNaN(v) ? current : current === undefined ? v : Math.max(current, v);
  const weighted = () => ({ sum: 0, weight: 0 });
  const hrAvg = weighted();
  const cadenceAvg = weighted();
  const powerAvg = weighted();
  const addWeighted = (acc: { sum: number; weight: number }, v: number, w: number) => {
    if (!Number.isNaN(v) && w > 0) {
      acc.sum += v * w;
      acc.weight += w;
    }
  };
  const totals: DeclaredTotals = {};
  for (const lap of laps) {
    const seconds = decimal(childText(lap, 'TotalTimeSeconds'));
    const d = decimal(childText(lap, 'DistanceMeters'));
    if (!Number.isNaN(d)) distance = (distance ?? 0) + d;
    const c = decimal(childText(lap, 'Calories'));
    if (!Number.isNaN(c)) calories = (calories ?? 0) + c;
    totals.heartRateMax = maxOf(totals.heartRateMax, bpmOf(lap, 'MaximumHeartRateBpm'));
    totals.speedMax = maxOf(totals.speedMax, decimal(childText(lap, 'MaximumSpeed')));
    addWeighted(hrAvg, bpmOf(lap, 'AverageHeartRateBpm'), seconds);
    addWeighted(cadenceAvg, decimal(childText(lap, 'Cadence')), seconds);
    const lx = child(child(lap, 'Extensions'), 'LX');
    addWeighted(powerAvg, decimal(childText(lx, 'AvgWatts')), seconds);
    totals.powerMax = maxOf(totals.powerMax, decimal(childText(lx, 'MaxWatts')));
  }
  if (distance !== undefined) totals.distance = Math.round(distance * 100) / 100;
  if (calories !== undefined) totals.calories = Math.round(calories);
  if (hrAvg.weight) totals.heartRateAvg = hrAvg.sum / hrAvg.weight;
  if (cadenceAvg.weight) totals.cadenceAvg = cadenceAvg.sum / cadenceAvg.weight;
  if (powerAvg.weight) totals.powerAvg = powerAvg.sum / powerAvg.weight;
  return totals;
}

const lapDistances = (lap: XmlNode) =>
  children(lap, 'Track')
    .flatMap((track) => children(track, 'Trackpoint'))
    .map((tp) => decimal(childText(tp, 'DistanceMeters')))
    .filter((d) => !Number.isNaN(d));

/**
 * What to add to each lap's trackpoint distances. Some writers (rowing apps such as CrewNerd)
 * count each lap's DistanceMeters from 0: a lap whose first distance falls back below half the
 * last distance of the laps before it restarts, and continues from where they ended. A small
 * step back (sensor noise) is no restart: the builder drops those values as before.
 */
export function lapDistanceOffsets(laps: XmlNode[]): number[] {
  const offsets: number[] = [];
  let offset = 0;
  let reached = Number.NaN; // the last cumulative distance of the laps so far
  for (const lap of laps) {
    const values = lapDistances(lap);
    const first = values[0];
    if (first !== undefined && !Number.isNaN(reached) && first < reached / 2) offset = reached;
    offsets.push(offset);
    const last = values.at(-1);
    if (last !== undefined) reached = Math.max(Number.isNaN(reached) ? 0 : reached, last + offset);
  }
  return offsets;
}

export function importTcx(bytes: Uint8Array, options: ImportOptions = {}): ImportedActivity {
  const text = decodeXml(bytes);
  if (rootElementName(text) !== 'TrainingCenterDatabase') {
    throw new ImportError(
      'unsupported-format',
      'the document is not a TCX file (its root element is not <TrainingCenterDatabase>)',
    );
  }
  const tcx = parseXml(text, 'TrainingCenterDatabase', ARRAY_TAGS);
  const activities = children(child(tcx, 'Activities'), 'Activity');
  const laps = activities.flatMap((a) => children(a, 'Lap'));
  if (!laps.length) {
    throw new ImportError(
      'no-activity',
      'the TCX file holds no activity lap (<Activities><Activity><Lap>): courses and workouts are plans, not recorded activities',
    );
  }
  const warnings: string[] = [];
  if (activities.length > 1)
    warnings.push(`the file's ${activities.length} <Activity> elements were joined into one activity`);

  const points = new PointCollector();
  const offsets = lapDistanceOffsets(laps);
  const restarts = offsets.filter((o, k) => k > 0 && o !== offsets[k - 1]).length;
  if (restarts)
    warnings.push(`the distances restart from 0 in ${restarts} lap(s): each lap's was added to the laps before it`);
  laps.forEach((lap, k) => {
    let lastTime = Number.NaN;
    for (const track of children(lap, 'Track')) {
      for (const tp of children(track, 'Trackpoint')) {
        const time = addTrackpoint(points, tp, offsets[k] as number);
        if (!Number.isNaN(time)) lastTime = time;
      }
    }
    points.lapEndsAt(lastTime);
  });

  const firstLap = laps[0] as XmlNode;
  const lastLap = laps[laps.length - 1] as XmlNode;
  const lastLapStart = dateTime(attr(lastLap, 'StartTime'));
  const lastLapSeconds = decimal(childText(lastLap, 'TotalTimeSeconds'));
  const firstStart = dateTime(attr(firstLap, 'StartTime'));
  const { sportId, sportSource } = resolveSport(options, sportFromTcx(attr(activities[0], 'Sport')));
  const built = buildActivity(points, {
    format: 'TCX',
    sportId,
    name: cleanName(childText(activities[0], 'Notes')),
    declaredStart: Number.isNaN(firstStart) ? dateTime(childText(activities[0], 'Id')) : firstStart,
    declaredEnd: lastLapStart + lastLapSeconds * 1000,
    declared: lapTotals(laps),
  });
  return { format: 'tcx', content: built.content, sportSource, warnings: [...warnings, ...built.warnings] };
}
