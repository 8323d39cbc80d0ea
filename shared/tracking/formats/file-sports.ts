import sports from '../../referentials/sports.json' with { type: 'json' };

/**
 * How the files name sports, and back: GPX `<type>` (free text), TCX `Sport` (Running, Biking,
 * Other), FIT `sport`/`subSport` (the SDK's profile names). Ids are those of the one sports
 * referential.
 */

const byId = new Map(sports.map((s) => [s.id, s]));
const bySlug = new Map(sports.map((s) => [s.slug, s.id]));

/** The sport when neither the caller nor the file names one: the referential's catch-all for movement. */
export const DEFAULT_IMPORT_SPORT_ID = 402;

const isUnder = (id: number, root: number) => {
  for (let s = byId.get(id); s; s = s.parentId === null ? undefined : byId.get(s.parentId)) {
    if (s.id === root) return true;
  }
  return false;
};

/** Bicycle, road cycling, MTB, BMX and their children, indoor bikes: their cadence is pedal RPM. */
export const isCycling = (sportId: number) =>
  [381, 385, 388, 360].some((root) => isUnder(sportId, root)) || sportId === 110 || sportId === 401;

const isRunning = (sportId: number) => isUnder(sportId, 121) || sportId === 395;

/** The words apps write in GPX `<type>` (Strava, Garmin, Komoot, OsmAnd...), lower-cased, `_`/`-`/space free. */
const GPX_WORDS: Record<string, number> = {
  run: 121,
  running: 121,
  trailrun: 126,
  trailrunning: 126,
  treadmill: 395,
  treadmillrunning: 395,
  ride: 381,
  cycling: 381,
  biking: 381,
  bike: 381,
  bicycle: 381,
  roadcycling: 385,
  roadbiking: 385,
  mountainbiking: 388,
  mtb: 388,
  mountainbikeride: 388,
  gravelcycling: 381,
  virtualride: 401,
  indoorcycling: 110,
  walk: 113,
  walking: 113,
  hike: 168,
  hiking: 168,
  swim: 274,
  swimming: 274,
  openwaterswimming: 274,
  rowing: 263,
  rowingmachine: 398,
  indoorrowing: 398,
  kayaking: 265,
  canoeing: 265,
  paddling: 265,
  standuppaddling: 400,
  standuppaddleboarding: 400,
  nordicski: 183,
  crosscountryskiing: 183,
  backcountryski: 177,
  backcountryskiing: 177,
  alpineski: 176,
  alpineskiing: 176,
  downhillskiing: 176,
  snowboard: 185,
  snowboarding: 185,
  snowshoe: 173,
  snowshoeing: 173,
  inlineskate: 367,
  inlineskating: 367,
  iceskate: 184,
  nordicwalking: 114,
  mountaineering: 153,
  climbing: 161,
  rockclimbing: 161,
  horsebackriding: 200,
  horseriding: 200,
  sailing: 301,
  windsurf: 280,
  windsurfing: 280,
  kitesurf: 273,
  kitesurfing: 273,
  surfing: 296,
  golf: 320,
  paragliding: 7,
  skateboard: 374,
  skateboarding: 374,
  elliptical: 397,
  workout: 91,
  fitness: 91,
  yoga: 105,
  pilates: 109,
};

/**
 * The sport a GPX `<type>` names: a referential slug (what our exports write), else a word apps
 * use; undefined when unknown.
 */
export function sportFromGpxType(type: string | undefined): number | undefined {
  if (!type) return undefined;
  const word = type.trim().toLowerCase();
  const slug = bySlug.get(word);
  if (slug !== undefined) return slug;
  return GPX_WORDS[word.replace(/[\s_-]+/g, '')];
}

/** What our GPX exports write in `<type>`: the referential slug. */
export const gpxTypeOf = (sportId: number): string | undefined => byId.get(sportId)?.slug;

/** TCX `Sport`: Running, Biking, Other (which says nothing). */
export function sportFromTcx(sport: string | undefined): number | undefined {
  if (sport === 'Running') return 121;
  if (sport === 'Biking') return 381;
  return undefined;
}

/** The TCX `Sport` of a sport: Running or Biking when it is one, Other otherwise. */
export function tcxSportOf(sportId: number): 'Running' | 'Biking' | 'Other' {
  if (isRunning(sportId)) return 'Running';
  if (isCycling(sportId)) return 'Biking';
  return 'Other';
}

const FIT_SUB_SPORTS: Record<string, number> = {
  treadmill: 395,
  indoorRunning: 395,
  trail: 126,
  track: 122,
  street: 123,
  road: 385,
  mountain: 388,
  downhill: 390,
  cyclocross: 382,
  trackCycling: 384,
  bmx: 360,
  indoorCycling: 110,
  spin: 110,
  virtualActivity: 401,
  indoorRowing: 398,
  elliptical: 397,
  strengthTraining: 98,
  cardioTraining: 404,
  yoga: 105,
  pilates: 109,
  backcountry: 177,
  indoorClimbing: 161,
  bouldering: 161,
  squash: 354,
  badminton: 335,
  tableTennis: 358,
  padel: 340,
};

const FIT_SPORTS: Record<string, number> = {
  running: 121,
  cycling: 381,
  eBiking: 381,
  fitnessEquipment: 91,
  swimming: 274,
  basketball: 10,
  soccer: 13,
  tennis: 357,
  training: 91,
  walking: 113,
  crossCountrySkiing: 183,
  alpineSkiing: 176,
  snowboarding: 185,
  rowing: 263,
  mountaineering: 153,
  hiking: 168,
  multisport: 77,
  paddling: 265,
  kayaking: 265,
  canoeing: 265,
  golf: 320,
  hangGliding: 7,
  horsebackRiding: 200,
  inlineSkating: 367,
  rockClimbing: 161,
  sailing: 301,
  iceSkating: 184,
  snowshoeing: 173,
  standUpPaddleboarding: 400,
  surfing: 296,
  windsurfing: 280,
  kitesurfing: 273,
  boxing: 35,
  mixedMartialArts: 45,
  rugby: 27,
  hockey: 20,
  volleyball: 32,
  archery: 326,
  dance: 79,
  jumpRope: 405,
  hiit: 404,
};

/**
 * The sport of a FIT session: the sub-sport when it is more precise and fits the sport, else the
 * sport; undefined for `generic` and what the referential has no id for (flying, driving...).
 */
export function sportFromFit(sport: unknown, subSport: unknown): number | undefined {
  if (typeof sport !== 'string') return undefined;
  const main = FIT_SPORTS[sport];
  const sub = typeof subSport === 'string' ? FIT_SUB_SPORTS[subSport] : undefined;
  if (sub !== undefined && (main === undefined || main === 91 || isUnder(sub, main) || sameFamily(sub, main))) {
    return sub;
  }
  return main;
}

/** A sub-sport refines its sport when both are cycling, running, or the indoor form of it. */
function sameFamily(a: number, b: number): boolean {
  if (isCycling(a) && isCycling(b)) return true;
  if (isRunning(a) && isRunning(b)) return true;
  return (a === 398 && b === 263) || (a === 177 && b === 176);
}
