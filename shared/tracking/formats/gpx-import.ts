import { buildActivity, cleanName } from './activity-builder.ts';
import { sportFromGpxType } from './file-sports.ts';
import { ImportError } from './import-error.ts';
import { type ImportedActivity, type ImportOptions, resolveSport } from './import-options.ts';
import { PointCollector, type PointValues } from './point-collector.ts';
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
  textOf,
  type XmlNode,
} from './xml-input.ts';

/**
 * GPX 1.0 and 1.1 (namespace prefixes ignored, so any writer's prefixes do). The activity is the
 * tracks' points (every <trk>, every <trkseg>, in file order); a file without timed track points
 * falls back to its route points, then its waypoints, when those carry times. Per point: lat,
 * lon, <ele>, <time>, GPX 1.0 <speed>, and in <extensions> (any namespace, up to three levels
 * deep) hr/heartrate, cad/cadence, power/PowerInWatts/watts, speed (Garmin TrackPointExtension
 * v1 and v2, Garmin PowerExtension, Cluetrust gpxdata, Strava's bare <power>). The segments
 * of a file's only track are laps (datatype 20 on each one's last point). The line from one
 * track or segment to the next is not distance (docs/tracking-files.md, "Distance").
 */

const ARRAY_TAGS = new Set(['trk', 'trkseg', 'trkpt', 'rte', 'rtept', 'wpt']);

/** Extension element local names (lower case) to the value they carry. */
const EXTENSION_FIELDS: Record<string, keyof PointValues> = {
  hr: 'heartRate',
  heartrate: 'heartRate',
  cad: 'cadence',
  cadence: 'cadence',
  runcadence: 'cadence',
  power: 'power',
  powerinwatts: 'power',
  watts: 'power',
  speed: 'speed',
};

function readExtensions(node: XmlNode | undefined, values: PointValues, depth = 0): void {
  if (!node || depth > 3) return;
  for (const [key, value] of Object.entries(node)) {
    if (key.startsWith('@_') || key === '#text') continue;
    const field = EXTENSION_FIELDS[key.toLowerCase()];
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item !== null && typeof item === 'object') readExtensions(item as XmlNode, values, depth + 1);
      else if (field && values[field] === undefined) {
        const v = decimal(typeof item === 'string' ? item : undefined);
        if (!Number.isNaN(v)) values[field] = v;
      }
    }
  }
}

function addPoint(points: PointCollector, pt: XmlNode): void {
  const values: PointValues = {
    latitude: decimal(attr(pt, 'lat')),
    longitude: decimal(attr(pt, 'lon')),
    elevation: decimal(childText(pt, 'ele')),
  };
  const speed = decimal(childText(pt, 'speed'));
  if (!Number.isNaN(speed)) values.speed = speed;
  readExtensions(child(pt, 'extensions'), values);
  points.add(dateTime(childText(pt, 'time')), values);
}

/**
 * GPX has no laps; segments stand for them (our export writes one track, a segment per lap): in a
 * file of one track with more than one segment holding a timed point, each such segment's last
 * timed point ends a lap. Several tracks are joined recordings, not laps: they mark nothing.
 */
function markSegmentLaps(points: PointCollector, tracks: XmlNode[][][]): void {
  const ends = (tracks.length === 1 ? (tracks[0] as XmlNode[][]) : [])
    .map((seg) =>
      seg.reduce((last, pt) => {
        const time = dateTime(childText(pt, 'time'));
        return Number.isNaN(time) ? last : time;
      }, Number.NaN),
    )
    .filter((end) => !Number.isNaN(end));
  if (ends.length > 1) for (const end of ends) points.lapEndsAt(end);
}

export function importGpx(bytes: Uint8Array, options: ImportOptions = {}): ImportedActivity {
  const text = decodeXml(bytes);
  if (rootElementName(text) !== 'gpx')
    throw new ImportError('unsupported-format', 'the document is not a GPX file (its root element is not <gpx>)');
  const gpx = parseXml(text, 'gpx', ARRAY_TAGS);
  const tracks = children(gpx, 'trk');
  const segments = tracks.map((trk) => children(trk, 'trkseg').map((seg) => children(seg, 'trkpt')));
  const trackPoints = segments.flat(2);
  const routePoints = children(gpx, 'rte').flatMap((rte) => children(rte, 'rtept'));
  const waypoints = children(gpx, 'wpt');

  let points = new PointCollector();
  let source = 'track point';
  for (const [kind, list] of [
    ['track point', trackPoints],
    ['route point', routePoints],
    ['waypoint', waypoints],
  ] as const) {
    points = new PointCollector();
    source = kind;
    if (kind === 'track point') {
      for (const seg of segments.flat()) {
        points.breakHere();
        for (const pt of seg) addPoint(points, pt);
      }
    } else for (const pt of list) addPoint(points, pt);
    if (points.size) break;
  }
  if (source === 'track point') markSegmentLaps(points, segments);
  if (!points.size) {
    const counts = `${trackPoints.length} track point(s), ${routePoints.length} route point(s), ${waypoints.length} waypoint(s)`;
    throw new ImportError(
      'no-activity',
      `the GPX file has no point with a <time> (${counts}): a route or a list of places is a plan, not a recorded activity`,
    );
  }

  const type = tracks.map((trk) => childText(trk, 'type')).find((t) => t !== undefined);
  const { sportId, sportSource } = resolveSport(options, sportFromGpxType(type));
  const name = childText(child(gpx, 'metadata'), 'name') ?? childText(gpx, 'name') ?? textOf(child(tracks[0], 'name'));
  const built = buildActivity(points, { format: 'GPX', sportId, name: cleanName(name), declared: {} });
  if (source !== 'track point') built.warnings.unshift(`the file has no timed track point: its ${source}s were used`);
  return { format: 'gpx', content: built.content, sportSource, warnings: built.warnings };
}
