import { importFit } from './fit-import.ts';
import { importGpx } from './gpx-import.ts';
import { ImportError } from './import-error.ts';
import type { ActivityFileFormat, ImportedActivity, ImportOptions } from './import-options.ts';
import { importTcx } from './tcx-import.ts';
import { rootElementName } from './xml-input.ts';

/**
 * Which importer a file goes to. The bytes decide (a FIT header, or the XML root element), as
 * clients often send a generic or wrong content type; the content type only has to be one a file
 * may come with.
 */

/** The media types an activity file may be sent with (parameters such as charset aside). */
export const ACTIVITY_FILE_MEDIA_TYPES: Record<ActivityFileFormat, readonly string[]> = {
  gpx: ['application/gpx+xml'],
  tcx: ['application/tcx+xml', 'application/vnd.garmin.tcx+xml'],
  fit: ['application/vnd.ant.fit', 'application/fit', 'application/x-fit'],
};
/** Generic types a file is also accepted under: the bytes tell which format it is. */
export const GENERIC_FILE_MEDIA_TYPES: readonly string[] = ['application/octet-stream', 'application/xml', 'text/xml'];

/** The media type of an export, by format. */
export const EXPORT_MEDIA_TYPES = { gpx: 'application/gpx+xml', tcx: 'application/tcx+xml' } as const;

const mediaType = (contentType: string | undefined) => contentType?.split(';')[0]?.trim().toLowerCase();

/** True when `contentType` names an activity file (a specific or a generic type). */
export function isActivityFileMediaType(contentType: string | undefined): boolean {
  const type = mediaType(contentType);
  if (!type) return false;
  return (
    GENERIC_FILE_MEDIA_TYPES.includes(type) || Object.values(ACTIVITY_FILE_MEDIA_TYPES).some((l) => l.includes(type))
  );
}

/** Is it a FIT file (size byte 12 or 14, ".FIT" at offset 8)? */
const isFitHeader = (b: Uint8Array) =>
  b.length >= 12 && (b[0] === 12 || b[0] === 14) && b[8] === 0x2e && b[9] === 0x46 && b[10] === 0x49 && b[11] === 0x54;

/** The format of `bytes`; refuses what is none of GPX, TCX, FIT, naming what was found. */
export function detectFormat(bytes: Uint8Array, contentType?: string): ActivityFileFormat {
  if (isFitHeader(bytes)) return 'fit';
  const head = bytes.subarray(0, 65536);
  const utf16 = (head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff);
  const text = new TextDecoder(utf16 ? (head[0] === 0xff ? 'utf-16le' : 'utf-16be') : 'utf-8').decode(head);
  const root = rootElementName(text);
  if (root === 'gpx') return 'gpx';
  if (root === 'TrainingCenterDatabase') return 'tcx';
  const sent = mediaType(contentType);
  throw new ImportError(
    'unsupported-format',
    `${sent ? `the body (sent as ${sent}) ` : 'the body '}is not a GPX, TCX or FIT file${
      root ? ` (its XML root element is <${root}>)` : ''
    }`,
  );
}

/** Reads an activity file of any supported format. Throws ImportError, saying why, when it cannot. */
export function importActivityFile(
  bytes: Uint8Array,
  options: ImportOptions & { contentType?: string } = {},
): ImportedActivity {
  const format = detectFormat(bytes, options.contentType);
  if (format === 'fit') return importFit(bytes, options);
  if (format === 'gpx') return importGpx(bytes, options);
  return importTcx(bytes, options);
}
