import { buffer } from 'node:stream/consumers';
import { gzipSync } from 'node:zlib';
import { ZipFile } from 'yazl';

/** Zips made in memory for the bulk import tests (not a test file itself). */

/** The header of a Strava export's activities.csv (its repeated columns too). */
export const STRAVA_HEADER =
  'Activity ID,Activity Date,Activity Name,Activity Type,Activity Description,Elapsed Time,Distance,Max Heart Rate,Relative Effort,Commute,Activity Private Note,Activity Gear,Filename,Athlete Weight,Bike Weight,Elapsed Time,Moving Time,Distance';

export interface ZipEntry {
  name: string;
  bytes: Uint8Array | string;
  /** Stored without compression (yazl deflates by default). */
  store?: boolean;
  /** gzip the bytes first (a Strava `.gpx.gz` member). */
  gzip?: boolean;
}

export async function makeZip(entries: ZipEntry[]): Promise<Buffer> {
  const zip = new ZipFile();
  for (const e of entries) {
    if (e.name.endsWith('/')) {
      zip.addEmptyDirectory(e.name);
      continue;
    }
    const raw = typeof e.bytes === 'string' ? Buffer.from(e.bytes) : Buffer.from(e.bytes);
    zip.addBuffer(e.gzip ? gzipSync(raw) : raw, e.name, { compress: !e.store });
  }
  zip.end();
  return buffer(zip.outputStream);
}

/**
 * Replaces every occurrence of `from` by `to` (the same length) in the zip's bytes: a member's
 * name in its local header and in the central directory, which yazl would refuse to write.
 */
export function renameInZip(zip: Buffer, from: string, to: string): Buffer {
  if (from.length !== to.length) throw new Error('same length only');
  const out = Buffer.from(zip);
  const needle = Buffer.from(from);
  for (let i = out.indexOf(needle); i >= 0; i = out.indexOf(needle, i + 1)) Buffer.from(to).copy(out, i);
  return out;
}

/** A small GPX of `points` seconds from `start`, a little east each second. */
export function gpxOf(
  start: Date,
  points: number,
  options: { type?: string; name?: string; lat?: number } = {},
): string {
  const lat = options.lat ?? 45;
  const trkpts = Array.from({ length: points }, (_, i) => {
    const time = new Date(start.getTime() + i * 1000).toISOString().replace('.000Z', 'Z');
    return `<trkpt lat="${lat}" lon="${(5 + i * 0.00003).toFixed(6)}"><ele>${200 + (i % 10)}</ele><time>${time}</time></trkpt>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>
<gpx version="1.1" creator="tests" xmlns="http://www.topografix.com/GPX/1/1"><trk>${
    options.name ? `<name>${options.name}</name>` : ''
  }${options.type ? `<type>${options.type}</type>` : ''}<trkseg>${trkpts.join('')}</trkseg></trk></gpx>`;
}
