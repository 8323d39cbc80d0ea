import { parse } from 'csv-parse/sync';
import { sportFromGpxType } from '../formats/file-sports.ts';

/**
 * A Strava-style `activities.csv` (the listing of a bulk export): per activity file it names
 * (`Filename`, e.g. `activities/123.fit.gz`), the activity's name, type and description. Strava
 * repeats some headers (`Elapsed Time`, `Distance`): columns are found by their first header.
 */

/** What the listing says of one file; absent members are not said. */
export interface ListedActivity {
  name?: string;
  /** The sport its `Activity Type` names (the words of shared/tracking/formats/file-sports.ts), if known. */
  sportId?: number;
  /** The type as written, when no sport of ours matches it (reported, the file's sport is kept). */
  unknownType?: string;
  description?: string;
}

export type ActivitiesListing = { files: Map<string, ListedActivity> } | { problem: string };

/** The listing's file name, as the zip's member paths are compared: `/` separators, no leading `./`. */
export const listedPath = (path: string) =>
  path
    .trim()
    .replace(/\\/g, '/')
    .replace(/^(\.\/)+/, '');

const COLUMNS = {
  file: 'filename',
  name: 'activity name',
  type: 'activity type',
  description: 'activity description',
} as const;

/** At most as many characters as an activity's name and comment hold. */
const cut = (text: string | undefined, max: number) => {
  const value = text?.trim();
  return value ? [...value].slice(0, max).join('') : undefined;
};

/** Reads the listing; a text that does not parse, or lacks a Filename column, is a problem (the files still import). */
export function parseActivitiesCsv(
  text: string,
  limits: { nameLength: number; commentLength: number },
): ActivitiesListing {
  let rows: string[][];
  try {
    rows = parse(text.replace(/^\uFEFF/, ''), { relax_column_count: true, skip_empty_lines: true }) as string[][];
  } catch (error) {
    return { problem: `activities.csv does not parse: ${(error as Error).message}` };
  }
  const [header, ...records] = rows;
  if (!header) return { problem: 'activities.csv is empty' };
  const index = (column: string) => header.findIndex((h) => h.trim().toLowerCase() === column);
  const at = {
    file: index(COLUMNS.file),
    name: index(COLUMNS.name),
    type: index(COLUMNS.type),
    description: index(COLUMNS.description),
  };
  if (at.file < 0) return { problem: 'activities.csv has no Filename column: its names and sports are not applied' };
  const files = new Map<string, ListedActivity>();
  for (const record of records) {
    const file = record[at.file];
    if (!file?.trim()) continue;
    const listed: ListedActivity = {};
    const name = cut(record[at.name], limits.nameLength);
    if (name) listed.name = name;
    const type = record[at.type]?.trim();
    const sportId = type ? sportFromGpxType(type) : undefined;
    if (sportId !== undefined) listed.sportId = sportId;
    else if (type) listed.unknownType = type;
    const description = cut(record[at.description], limits.commentLength);
    if (description) listed.description = description;
    files.set(listedPath(file), listed);
  }
  return { files };
}
