import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * Sport families for the `distance.<m>m` records (docs/tracking-records.md): which sports belong
 * to each, the standard distances timed in their activities, and the fastest credible speed, above
 * which a jump between two samples is a GPS or sensor glitch rather than the athlete moving.
 */
export interface SportFamily {
  /** Sport ids; a sport's children belong to the family too, unless listed in another family. */
  sports: number[];
  /** Metres, ascending integers: each gives the record type `distance.<metres>m`. */
  distances: number[];
  /** Metres per second. */
  maxSpeed: number;
}

export interface RecordsSettings {
  families: Record<string, SportFamily>;
}

/**
 * The defaults. Speed caps sit above the best athletes' peaks (sprinters reach 12.4 m/s, descending
 * cyclists over 30 m/s, swimmers 2.4 m/s), so only glitches are refused.
 */
export const DEFAULT_RECORDS_SETTINGS: RecordsSettings = {
  families: {
    // Running (121) and its children, and the treadmill.
    running: {
      sports: [121, 395],
      distances: [400, 804, 1000, 1609, 3218, 5000, 10000, 21097, 42195],
      maxSpeed: 12.5,
    },
    // Bicycle, road cycling and mountain biking with their children; indoor bikes.
    cycling: {
      sports: [381, 385, 388, 110, 401],
      distances: [5000, 10000, 20000, 40000, 50000, 100000, 160900],
      maxSpeed: 35,
    },
    // Walking, Nordic walking, hiking, mountaineering, snow-shoeing.
    walking: {
      sports: [113, 114, 168, 153, 173],
      distances: [1000, 5000, 10000, 21097, 42195],
      maxSpeed: 7,
    },
    swimming: {
      sports: [274],
      distances: [50, 100, 200, 400, 800, 1500, 3800],
      maxSpeed: 3,
    },
    // Rowing, canoeing and kayaking, the rowing machine, stand up paddle boarding.
    paddling: {
      sports: [263, 265, 398, 400],
      distances: [500, 1000, 2000, 5000, 10000, 21097, 42195],
      maxSpeed: 8,
    },
    skating: {
      sports: [367],
      distances: [1000, 5000, 10000, 21097, 42195],
      maxSpeed: 20,
    },
    // Alternative Nordic skiing and Nordic skating (cross-country skiing).
    'nordic-skiing': {
      sports: [183, 184],
      distances: [5000, 10000, 15000, 30000, 50000],
      maxSpeed: 20,
    },
  },
};

const sportId = z.number().int().min(1).max(2_147_483_647);
/** Distances are part of a type name and an index key: whole metres, up to 1000 km. */
const distance = z.number().int().min(1).max(1_000_000);

const familyOverride = z.strictObject({
  sports: z.array(sportId).max(1000).optional(),
  distances: z
    .array(distance)
    .max(50)
    .refine((list) => new Set(list).size === list.length, 'distances must be unique')
    .optional(),
  maxSpeed: z.number().positive().max(340).optional(),
});

/**
 * The file RECORDS_FAMILIES_FILE names: `{"families": {"<name>": {...} | null}}`. A family given
 * replaces the fields it names of the default family of that name (a new name adds a family, whose
 * three fields are then required); `null` removes a default family.
 */
export const recordsSettingsFile = z.strictObject({
  families: z.record(
    z.string().regex(/^[a-z][a-z0-9-]{0,31}$/, 'a family name: a-z, 0-9 and -'),
    familyOverride.nullable(),
  ),
});
export type RecordsSettingsFile = z.infer<typeof recordsSettingsFile>;

/** The defaults with a file's overrides applied; throws an Error naming the problem. */
export function applyRecordsSettings(file: RecordsSettingsFile, base = DEFAULT_RECORDS_SETTINGS): RecordsSettings {
  const families: Record<string, SportFamily> = { ...base.families };
  for (const [name, override] of Object.entries(file.families)) {
    if (override === null) {
      delete families[name];
      continue;
    }
    const merged = { ...families[name], ...override };
    if (!merged.sports || !merged.distances || merged.maxSpeed === undefined)
      throw new Error(`families.${name}: a new family needs sports, distances and maxSpeed`);
    families[name] = {
      sports: [...merged.sports],
      distances: [...merged.distances].sort((a, b) => a - b),
      maxSpeed: merged.maxSpeed,
    };
  }
  const owner = new Map<number, string>();
  for (const [name, family] of Object.entries(families))
    for (const sport of family.sports) {
      const other = owner.get(sport);
      if (other !== undefined) throw new Error(`sport ${sport} is in two families: ${other} and ${name}`);
      owner.set(sport, name);
    }
  return { families };
}

/** Reads and applies a settings file; an Error says what is wrong with it. */
export function readRecordsSettingsFile(path: string): RecordsSettings {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`cannot read ${path} as JSON: ${(error as Error).message}`);
  }
  const parsed = recordsSettingsFile.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${path}: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`);
  }
  return applyRecordsSettings(parsed.data);
}

/**
 * The check of RECORDS_FAMILIES_FILE (shared/config.ts) the tracking service registers
 * (shared/tracking/registration.ts): the path stays the value, but a file that cannot be read or
 * breaks a rule stops the start with a message naming the variable.
 */
export const recordsFamiliesFileVariable = z.string().superRefine((path, ctx) => {
  try {
    readRecordsSettingsFile(path);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message });
  }
});

const loaded = new Map<string, RecordsSettings>();

/** The settings of a process: the defaults, or those of its RECORDS_FAMILIES_FILE (read once). */
export function recordsSettings(file: string | undefined): RecordsSettings {
  if (file === undefined) return DEFAULT_RECORDS_SETTINGS;
  let settings = loaded.get(file);
  if (!settings) {
    settings = readRecordsSettingsFile(file);
    loaded.set(file, settings);
  }
  return settings;
}

/**
 * The family of a sport from its ancestry (the sport first, then its parent, and so on): the
 * nearest sport listed in a family decides, so a child sport can be given a family of its own.
 */
export function familyOf(settings: RecordsSettings, ancestry: readonly number[]): SportFamily | null {
  for (const sport of ancestry)
    for (const family of Object.values(settings.families)) if (family.sports.includes(sport)) return family;
  return null;
}

/**
 * Bumped when the computation changes in a way that changes results, so `records:recompute`
 * makes new jobs rather than meeting the ids of jobs already done.
 */
export const RECORDS_ALGORITHM_VERSION = 2;

/** A short digest of what the results depend on besides the activities: settings, record ways, algorithm. */
export function settingsFingerprint(settings: RecordsSettings, recordWays: ReadonlyMap<number, number>): string {
  const families = Object.keys(settings.families)
    .sort()
    .map((name) => [name, settings.families[name]]);
  const ways = [...recordWays.entries()].sort((a, b) => a[0] - b[0]);
  return createHash('sha256')
    .update(JSON.stringify([RECORDS_ALGORITHM_VERSION, families, ways]))
    .digest('hex')
    .slice(0, 12);
}
