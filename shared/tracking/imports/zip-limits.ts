import { IMPORT_LIMITS } from '../formats/limits.ts';

/**
 * What a bulk import's zip may hold (docs/tracking-files.md, "Bulk import"). The zip's central
 * directory is checked against every limit before a byte of a member is inflated; a member's
 * inflation then stops at its declared size (yauzl checks it), and a gzip member's at its own cap.
 */
export const ZIP_LIMITS = {
  /** Entries in the central directory, folders included: a Strava export of 15 years holds about 5,000. */
  maxEntries: 10_000,
  /** Declared uncompressed sizes of all entries together. */
  maxTotalBytes: 4 * 1024 * 1024 * 1024,
  /** One member, as stored or after gunzip: the largest activity file an import reads. */
  maxEntryBytes: IMPORT_LIMITS.maxXmlBytes,
  /** Uncompressed ÷ compressed size of one entry (and of a gzip member): activity files stay far below. */
  maxRatio: 100,
  /** Folders above a member (`activities/2024/x.gpx` is 2). */
  maxDepth: 8,
  /** Bytes of a member's path. */
  maxNameBytes: 512,
} as const;

export type ZipLimits = { -readonly [K in keyof typeof ZIP_LIMITS]: number };

/** Why a whole zip is refused: the limit it breaks (a key of ZIP_LIMITS) or what it is not. */
export type ZipRefusalReason = keyof typeof ZIP_LIMITS | 'not-a-zip' | 'empty' | 'path-names' | 'encrypted';

/** A zip refused whole, before any member was imported; the message names the limit. */
export class ZipRefusal extends Error {
  readonly reason: ZipRefusalReason;

  constructor(reason: ZipRefusalReason, message: string) {
    super(message);
    this.name = 'ZipRefusal';
    this.reason = reason;
  }
}

/** The sentence naming a limit: `(ZIP_LIMITS.maxRatio: 100)`. */
export const limitName = (key: keyof ZipLimits, limits: ZipLimits) => `ZIP_LIMITS.${key}: ${limits[key]}`;
