import type { ActivityContent } from '../activities/data.ts';
import { DEFAULT_IMPORT_SPORT_ID } from './file-sports.ts';

/** What the caller says along with a file. */
export interface ImportOptions {
  /** The sport the caller chose: it wins over the file's. */
  sportId?: number;
  /** The sport when neither the caller nor the file names one (default: DEFAULT_IMPORT_SPORT_ID). */
  fallbackSportId?: number;
}

export type ActivityFileFormat = 'gpx' | 'tcx' | 'fit';

export interface ImportedActivity {
  format: ActivityFileFormat;
  content: ActivityContent;
  /** Where the sport came from: the caller, the file, or the fallback (the file names none we know). */
  sportSource: 'caller' | 'file' | 'fallback';
  /** What was skipped or ignored, one sentence each (untimed points, implausible values...). */
  warnings: string[];
}

export function resolveSport(
  options: ImportOptions,
  fromFile: number | undefined,
): { sportId: number; sportSource: ImportedActivity['sportSource'] } {
  if (options.sportId !== undefined) return { sportId: options.sportId, sportSource: 'caller' };
  if (fromFile !== undefined) return { sportId: fromFile, sportSource: 'file' };
  return { sportId: options.fallbackSportId ?? DEFAULT_IMPORT_SPORT_ID, sportSource: 'fallback' };
}
