import { ACTIVITY_LIMITS } from '../activities/content.ts';

/**
 * What an imported file may hold. The byte caps bound the parsers' memory (fast-xml-parser builds
 * a tree of about ten times the XML's size; the FIT SDK decodes at about 1 MB/s here); the other
 * caps keep one activity within what the API stores and serves in one piece.
 */
export const IMPORT_LIMITS = {
  /** GPX and TCX: a 24-hour TCX at 1 Hz with every field is about 35 MB. */
  maxXmlBytes: 64 * 1024 * 1024,
  /** FIT: a 24-hour recording at 1 Hz is about 3 to 4 MB. */
  maxFitBytes: 16 * 1024 * 1024,
  /** Distinct seconds kept: what an activity holds (ACTIVITY_LIMITS.maxSamples, 48 hours at 1 Hz). */
  maxSamples: ACTIVITY_LIMITS.maxSamples,
  /** From the first to the last second: the span any activity may have (seven days), one limit for files and JSON. */
  maxDurationSeconds: ACTIVITY_LIMITS.maxSeconds,
  /** Longer names are cut (at a character boundary). */
  maxNameLength: 255,
} as const;

/** The instants the tracking API accepts (the same bounds as its `dateTime` inputs). */
export const EARLIEST_START = Date.UTC(1900, 0, 1);
export const LATEST_START = Date.UTC(2100, 0, 1);

/**
 * Values outside these bounds are sensor faults or unit mistakes (a HR strap writing 1 bpm, a
 * speed in mm/s): they are dropped, counted in the import's warnings, instead of becoming records.
 */
export const PLAUSIBLE = {
  heartRate: { min: 20, max: 250 },
  cadence: { min: 0, max: 300 },
  power: { min: 0, max: 3000 },
  /** m/s (540 km/h): above every human-powered or gliding sport. */
  speed: { min: 0, max: 150 },
  elevation: { min: -500, max: 9000 },
  distance: { min: 0, max: 100_000_000 },
} as const;
