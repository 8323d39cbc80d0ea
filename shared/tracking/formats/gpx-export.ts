import { pauses } from '../../runtime/paced-stream.ts';
import type { ActivityContent } from '../activities/data.ts';
import { cleanName } from './activity-builder.ts';
import { DIGITS, type ExportSamples, exportSampleSteps } from './export-samples.ts';
import { gpxTypeOf } from './file-sports.ts';
import { CHUNK_CHARS, escapeXml, fixed, isoSecond, joinChunks } from './xml-output.ts';

/**
 * GPX 1.1 of an activity: one track, a segment per lap (GPX has no laps: a lap's located
 * points make its segment, and our importer reads segments back as laps), a point per located
 * second with its elevation and time; heart rate and cadence in Garmin's TrackPointExtension v1 (`gpxtpx:hr`, `gpxtpx:cad`),
 * power in Garmin's PowerExtension v1 (`gpxpx:PowerInWatts`), what Garmin Connect writes and
 * Strava, Komoot and our importer read. GPX has no distances or speeds: those are TCX's.
 * The sport is the referential slug in `<type>`, the name in `<metadata><name>` and `<trk><name>`.
 * A generator of chunks: a response can stream them; `exportGpx` joins them.
 */

export const GPX_CREATOR = 'sports-backend';

const HEADER =
  '<?xml version="1.0" encoding="UTF-8"?>\n' +
  `<gpx version="1.1" creator="${GPX_CREATOR}" xmlns="http://www.topografix.com/GPX/1/1"` +
  ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"' +
  ' xmlns:gpxtpx="http://www.garmin.com/xmlschemas/TrackPointExtension/v1"' +
  ' xmlns:gpxpx="http://www.garmin.com/xmlschemas/PowerExtension/v1"' +
  ' xsi:schemaLocation="http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd' +
  ' http://www.garmin.com/xmlschemas/TrackPointExtension/v1 http://www.garmin.com/xmlschemas/TrackPointExtensionv1.xsd' +
  ' http://www.garmin.com/xmlschemas/PowerExtension/v1 http://www.garmin.com/xmlschemas/PowerExtensionv1.xsd">\n';

export function* gpxChunks(content: ActivityContent): Generator<string> {
  const s = yield* pauses(exportSampleSteps(content, true));
  const start = Math.round(content.startdate.getTime() / 1000) * 1000;
  const name = cleanName(content.name ?? undefined);
  const nameTag = name === null ? '' : `<name>${escapeXml(name)}</name>`;
  const type = gpxTypeOf(content.sportId);
  // The first written point's time: a re-import starts the activity there.
  const first = s.latitude.findIndex((lat) => !Number.isNaN(lat));
  const firstTime = first < 0 ? start : start + (s.elapsed[first] as number) * 1000;
  let out = `${HEADER} <metadata>${nameTag}<time>${isoSecond(firstTime)}</time></metadata>\n <trk>${nameTag}${
    type ? `<type>${escapeXml(type)}</type>` : ''
  }\n`;
  // A segment per lap that has a written point: a lap ends after its last written point.
  let open = false;
  let written = false;
  for (let i = 0; i < s.elapsed.length; i++) {
    const lat = s.latitude[i] as number;
    if (!Number.isNaN(lat)) {
      if (!open) out += '  <trkseg>\n';
      open = true;
      written = true;
      out += trkpt(s, i, start);
    }
    if (s.lap[i] && open) {
      out += '  </trkseg>\n';
      open = false;
    }
    if (out.length >= CHUNK_CHARS) {
      yield out;
      out = '';
    }
  }
  if (open) out += '  </trkseg>\n';
  // Without any position, one empty segment: a valid GPX.
  if (!written) out += '  <trkseg>\n  </trkseg>\n';
  yield `${out} </trk>\n</gpx>\n`;
}

function trkpt(s: ExportSamples, i: number, start: number): string {
  let out = `   <trkpt lat="${fixed(s.latitude[i] as number, DIGITS.position)}" lon="${fixed(s.longitude[i] as number, DIGITS.position)}">`;
  const ele = s.elevation[i] as number;
  if (!Number.isNaN(ele)) out += `<ele>${fixed(ele, DIGITS.elevation)}</ele>`;
  out += `<time>${isoSecond(start + (s.elapsed[i] as number) * 1000)}</time>`;
  const hr = s.heartRate[i] as number;
  const cad = s.cadence[i] as number;
  const power = s.power[i] as number;
  if (!Number.isNaN(hr) || !Number.isNaN(cad) || !Number.isNaN(power)) {
    out += '<extensions>';
    if (!Number.isNaN(hr) || !Number.isNaN(cad)) {
      out += '<gpxtpx:TrackPointExtension>';
      if (!Number.isNaN(hr)) out += `<gpxtpx:hr>${hr}</gpxtpx:hr>`;
      if (!Number.isNaN(cad)) out += `<gpxtpx:cad>${cad}</gpxtpx:cad>`;
      out += '</gpxtpx:TrackPointExtension>';
    }
    if (!Number.isNaN(power)) out += `<gpxpx:PowerInWatts>${power}</gpxpx:PowerInWatts>`;
    out += '</extensions>';
  }
  return `${out}</trkpt>\n`;
}

export const exportGpx = (content: ActivityContent): string => joinChunks(gpxChunks(content));
