#!/usr/bin/env node
// Builds the committed referential seed files in shared/referentials/ from the
// team reference data (a folder beside the repository, not part of it).
//
// Usage: node scripts/build-referentials.mjs [path-to-shared/reference]
// Default reference path: ../shared/reference relative to the repo root.
//
// Output (deterministic: arrays sorted by id, object keys in a fixed order,
// 2-space indent, trailing newline): sports.json, groups.json,
// universes.json, datatypes.json, places-tags-filters.json.
//
// Every hand-made decision lives in the CURATED constants below, each with the
// reason. shared/referentials/PROVENANCE.md summarises sources and decisions.
// No dependencies: plain Node ESM.

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const refDir = resolve(process.argv[2] ?? join(repoRoot, '../shared/reference'));
const outDir = join(repoRoot, 'shared/referentials');

const LANGS = ['de', 'en', 'es', 'fr', 'hu', 'it', 'nl', 'pl', 'pt', 'ru', 'zh'];

// ---------------------------------------------------------------------------
// CURATED: sports
// ---------------------------------------------------------------------------

// Names for sports that lack an English and/or French name in the sources.
// `sdk` is the constant of sportstrackingdata-php-sdk-constants.json that
// carries the id (checked at build time). Its French-ish constant name is the
// source of `fr` (accents restored by hand); `en` is our hand translation.
// Where the docs already give `en` (docs-only sports), only `fr` is set here.
// 405 Jumping rope has no constant and no French name in any source: `fr` is a
// hand translation (listed in PROVENANCE.md).
const CURATED_SPORT_NAMES = {
  21: { sdk: 'HOCKEY_SUR_GLACE', en: 'Ice hockey', fr: 'Hockey sur glace' },
  109: { sdk: 'PILATES', fr: 'Pilates' },
  122: {
    sdk: 'COURSE_A_PIED_SUR_PISTE',
    en: 'Track running',
    fr: 'Course à pied sur piste',
  },
  123: {
    sdk: 'COURSE_A_PIED_SUR_ROUTE',
    en: 'Road running',
    fr: 'Course à pied sur route',
  },
  124: {
    sdk: 'COURSE_A_PIED_EN_NATURE',
    en: 'Off-road running',
    fr: 'Course à pied en nature',
  },
  125: { sdk: 'CROSS', en: 'Cross-country running', fr: 'Cross' },
  127: { sdk: 'COURSE_D_ORIENTATION', fr: "Course d'orientation" },
  132: { sdk: 'DIX_KM', en: '10 km run', fr: '10 km' },
  133: { sdk: 'SEMI_MARATHON', en: 'Half marathon', fr: 'Semi-marathon' },
  134: { sdk: 'MARATHON', en: 'Marathon', fr: 'Marathon' },
  135: { sdk: 'CENT_KM', en: '100 km run', fr: '100 km' },
  136: { sdk: 'TRAIL_COURT', en: 'Short trail', fr: 'Trail court' },
  137: { sdk: 'TRAIL_LONG', en: 'Long trail', fr: 'Trail long' },
  138: { sdk: 'ULTRA_TRAIL', en: 'Ultra trail', fr: 'Ultra-trail' },
  361: { sdk: 'BMX_RACE', en: 'BMX racing', fr: 'BMX race' },
  362: { sdk: 'BMX_STREET', en: 'BMX street', fr: 'BMX street' },
  363: { sdk: 'BMX_TRIAL', en: 'BMX trial', fr: 'BMX trial' },
  364: { sdk: 'PLAYBIKE', en: 'Playbike', fr: 'Playbike' },
  380: { sdk: 'TROTINETTE', fr: 'Trottinette' },
  382: { sdk: 'CYCLOCROSS', en: 'Cyclocross', fr: 'Cyclo-cross' },
  383: { sdk: 'CYCLOTOURISME', en: 'Cycle touring', fr: 'Cyclotourisme' },
  384: { sdk: 'VELO_SUR_PISTE', en: 'Track cycling', fr: 'Vélo sur piste' },
  386: { sdk: 'VELO_URBAIN', en: 'Urban cycling', fr: 'Vélo urbain' },
  387: { sdk: 'VELO_RANDONNEE', en: 'Trekking cycling', fr: 'Vélo randonnée' },
  389: {
    sdk: 'VTT_CROSS_COUNTRY',
    en: 'Cross-country mountain biking',
    fr: 'VTT cross-country',
  },
  390: {
    sdk: 'VTT_DESCENTE',
    en: 'Downhill mountain biking',
    fr: 'VTT descente',
  },
  391: { sdk: 'VTT_DIRT', en: 'Dirt jumping', fr: 'VTT dirt' },
  392: { sdk: 'VTT_TRIAL', en: 'Mountain bike trials', fr: 'VTT trial' },
  393: { sdk: 'VTT_ENDURO', en: 'Enduro mountain biking', fr: 'VTT enduro' },
  394: {
    sdk: 'VTT_ALL_MOUNTAIN',
    en: 'All-mountain biking',
    fr: 'VTT all mountain',
  },
  403: { sdk: 'ZUMBA', fr: 'Zumba' },
  404: { sdk: 'CROSS_TRAINING', fr: 'Cross training' },
  405: { fr: 'Corde à sauter', handTranslated: true },
};

// Parent -> children. Two levels only: the catalogue spec says a child sport
// carries no children, so a child is never a parent.
// - 121 running: the SDK running block 122-138 (brief + SDK id layout), which
//   includes 126 Trail and 127 Orientation racing; trail distances 136-138 go
//   directly under running because of the two-level rule.
// - 388 mountain biking: SDK block 389-394, all named VTT_*.
// - 360 BMX: 361-363, named BMX_* in the SDK. 364 PLAYBIKE sits in the same id
//   block but is not clearly a BMX discipline: left without parent.
// - 174 skiing: the skiing disciplines of the tracking list (176 alpine,
//   177 back country, 183/184 Nordic). The catalogue also models skiing as a
//   parent sport with children.
// - 381 bicycle: the SDK VELO/cycling block 382-387 except 385 road cycling,
//   which the catalogue sample shows as a top-level sport (parent_id null)
//   with its own children; 388 stays top-level as MTB has its own children.
const HIERARCHY = {
  121: [122, 123, 124, 125, 126, 127, 132, 133, 134, 135, 136, 137, 138],
  174: [176, 177, 183, 184],
  360: [361, 362, 363],
  381: [382, 383, 384, 386, 387],
  388: [389, 390, 391, 392, 393, 394],
};

// Universe for sports the linkdata mock and docs don't place in a universe,
// and that don't inherit one from a parent (children inherit their parent's
// universe when no source gives one). Chosen by analogy with the mock:
// ice hockey with the team sports (2, like Hockey 20); Pilates, Zumba, cross
// training and jumping rope with Fitness/Yoga/Dance (4); scooter and Playbike
// with bikes, roller and skateboard (11).
const CURATED_SPORT_UNIVERSE = {
  21: 2,
  109: 4,
  364: 11,
  380: 11,
  403: 4,
  404: 4,
  405: 4,
};

// Catalogue sample sports (sports-catalogue-samples.json use another id space)
// mapped BY NAME onto tracking ids. Catalogue ids are never reused as ours:
// several collide with different tracking sports (catalogue 284 Hybrid biking
// vs tracking 284 Underwater diving, 385/405/390/391 in groups, etc.).
const CATALOGUE_NAME_TO_SPORT_ID = {
  Swimming: 274, // catalogue 278 (old doc) and 224
  Skiing: 174, // catalogue 66
  'Road cycling': 385, // catalogue 282
  Triathlon: 77, // catalogue 391
  Aquafit: 260, // catalogue 219; Aquafit = aqua gym (fr "Aquagym")
  // Not mapped (no tracking sport with that meaning): Body Building / Cross
  // Training 291 (ambiguous between 98 and 404), Hybrid biking 284, Duathlon 1,
  // Aquathlon 900, Winter triathlon 899, Long-distance running 511, Adventure
  // running 508. They are not added: we don't mint ids for them.
};

// The catalogue's legacy (vendor) id of each mapped sport: its `decathlon_id`
// when the sample gives one, else its catalogue id. Swimming appears as 278 (an
// older sample) and 224 (the 2019 sample with decathlon_id 224): 224 is kept.
// Sports outside this table have no vendor id (null). The catalogue's `tags`
// (only Swimming and Skiing carry some) become the sport's catalogue tags.
const CATALOGUE_VENDOR_ID = { 274: 224, 174: 66, 385: 282, 77: 391, 260: 219 };

// Sport descriptions: no source gives any, so every sport has `descriptions: {}`
// (the catalogue answers null). Add `{id: {en, fr, ...}}` here when one does.
const CURATED_SPORT_DESCRIPTIONS = {};

// ---------------------------------------------------------------------------
// CURATED: universes
// ---------------------------------------------------------------------------

// The mock lists universes 1, 2, 5, 6 with French names only: English is ours.
const UNIVERSE_EN = {
  1: 'Air sports',
  2: 'Team sports',
  5: 'Motor sports',
  6: 'Mountain sports',
};

// The mock's sports reference universes 3, 4, 7, 8, 9, 10, 11, which its
// universe list lacks. They are kept (so sport.universeId stays a valid
// reference) with names WE inferred from the sports the mock puts in them.
// No source names them: replace when one does.
const CURATED_UNIVERSES = {
  3: { en: 'Combat sports', fr: 'Sports de combat' }, // boxing, martial arts
  4: { en: 'Fitness and endurance', fr: 'Forme et endurance' }, // fitness, running, walking, yoga, indoor machines
  7: { en: 'Equestrian sports', fr: 'Sports équestres' }, // horse riding
  8: { en: 'Water sports', fr: 'Sports nautiques' }, // swimming, surf, sailing, diving, rowing
  9: { en: 'Other sports', fr: 'Autres sports' }, // golf, archery, stand up paddle: no common theme
  10: { en: 'Racket sports', fr: 'Sports de raquette' }, // tennis, badminton, squash, padel, table tennis
  11: { en: 'Wheel sports', fr: 'Sports sur roues' }, // bikes, BMX, roller, skateboard, land sailing
};

// ---------------------------------------------------------------------------
// CURATED: groups
// ---------------------------------------------------------------------------

// Catalogue groups. Ids 1, 2 come from groups_seen; 11 and 22 are the `group`
// of catalogue sample sports (road cycling + hybrid biking -> 11, skiing -> 22)
// whose names are not given, so the names are ours. Ids >= 1000 are groups of
// our own, chosen outside the catalogue range to avoid future collisions.
// A catalogue sport has a single `group`, so each sport is in at most one
// group here. Members mapped from the catalogue are added automatically (see
// buildGroups); `extra` lists the members we add by hand.
const GROUPS = [
  {
    id: 1,
    slug: 'water-aerobics',
    names: { en: 'Water Aerobics', fr: 'Aquagym' },
    extra: [],
  },
  {
    // Catalogue members 257, 390 have no known name: the members are ours.
    id: 2,
    slug: 'athletics',
    names: { en: 'Athletics', fr: 'Athlétisme' },
    extra: [121, 122, 123, 124, 125, 126, 132, 133, 134, 135, 136, 137, 138],
  },
  {
    id: 11,
    slug: 'cycling',
    names: { en: 'Cycling', fr: 'Cyclisme' },
    extra: [360, 361, 362, 363, 364, 381, 382, 383, 384, 386, 387, 388, 389, 390, 391, 392, 393, 394],
  },
  {
    id: 22,
    slug: 'skiing',
    names: { en: 'Skiing', fr: 'Ski' },
    extra: [176, 177, 183, 184],
  },
  {
    id: 1001,
    slug: 'water-sports',
    names: { en: 'Water sports', fr: 'Sports nautiques' },
    extra: [263, 264, 265, 273, 280, 284, 296, 301, 400],
  },
  {
    id: 1002,
    slug: 'racket-sports',
    names: { en: 'Racket sports', fr: 'Sports de raquette' },
    extra: [335, 340, 354, 357, 358],
  },
];

// ---------------------------------------------------------------------------
// CURATED: datatypes
// ---------------------------------------------------------------------------

// SDK constants 208-210 are real datatypes (< 10000) absent from the mock.
// Name from the constant; unit and cumulable by analogy (no source gives
// them): stride length in cm like Height (27), steps objective in steps like
// Step number (29), sleep objective in s like Sleeping Time (196). Objectives
// are targets, not sums: cumulable false.
const CURATED_DATATYPES = {
  208: { sdk: 'STRIDE_LENGTH', en: 'Stride length', unit: 'cm' },
  209: { sdk: 'STEPS_OBJECTIVE', en: 'Steps objective', unit: 'steps' },
  210: { sdk: 'SLEEP_OBJECTIVE', en: 'Sleep objective', unit: 's' },
};

// The mock names both 206 and 207 "Avg Bike Trainer Resistance"; the SDK says
// 206 = MAX_BIKE_TRAINER_RESISTANCE, 207 = AVG_BIKE_TRAINER_RESISTANCE, and
// the spec gives 206 recordWay 1 (a maximum). Rename 206.
const DATATYPE_NAME_FIX = { 206: 'Max Bike Trainer Resistance' };

// A null unit is written "none", as the spec's main datatype table does.
const NULL_UNIT = 'none';

// Spec table "Main datatypes" (the tracking spec), flags column:
// [recordWay, cumulable]. "1 1" = recordWay 1 + cumulable; one number =
// recordWay, cumulable false. Cross-checked against datatypes_top25 of
// tracking-referentials-from-docs.json at build time.
const SPEC_DATATYPE_FLAGS = {
  99: [1, true],
  24: [1, true],
  5: [1, true],
  23: [1, true],
  9: [1, false],
  6: [0, false],
  18: [1, true],
  19: [1, true],
  16: [0, false],
  15: [1, false],
  14: [0, false],
  36: [0, false],
  4: [0, false],
  7: [1, false],
  3: [1, false],
  1: [0, false],
  20: [0, false],
  17: [0, false],
  10: [0, false],
  177: [0, false],
  207: [0, false],
  206: [1, false],
  103: [1, false],
  101: [0, false],
  100: [0, false],
};

// Spec: datatype 181 is body weight in grams, recordWay 0, cumulable false.
const FORCED_DATATYPES = { 181: { unit: 'g', recordWay: 0, cumulable: false } };

// ---------------------------------------------------------------------------
// CURATED: places tags and filters
// ---------------------------------------------------------------------------

// Level filters (integers 0..2) per the places spec (docs/places.md).
const LEVEL_FILTERS = ['cellphone_service', 'difficulty', 'quality'];

// The places docs use their own sport ids (186 Diving, 175 ice hockey, ...).
// Mapped by name onto tracking ids; only 186 has a per-sport list.
const PLACES_SPORT_ID_MAP = { 186: 284 }; // Diving -> Underwater diving (Plongée)

// The older per-sport example uses the generic filter "size", which the
// current filter list replaced by specific *_size filters; for diving (with
// pools: tag "indoor") we use pool_size.
const PLACES_FILTER_RENAME = { size: 'pool_size' };

// Surface is an open list in the spec ("clay, sand, and others"); the reference
// adds examples seen elsewhere (concrete, ice). The others are ours: the usual
// surfaces of courts, fields, tracks and trails, so a user can describe a place.
const SURFACE_EXTRA_VALUES = [
  'concrete',
  'ice',
  'artificial_turf',
  'asphalt',
  'carpet',
  'dirt',
  'grass',
  'gravel',
  'hard',
  'snow',
  'synthetic',
  'wood',
];

// Per-sport allowed tags and filters for the main sports. The public source has a
// list for one sport only (diving); these are ours, chosen by what a player of the
// sport asks about a place (the places spec's tag and filter lists only).
// Merged with the source lists; staff edit them later through /sports/{id}/tags|filters.
const COMMON_TAGS = ['free', 'free_parking', 'paid_parking', 'toilets', 'water_fountain', 'wheelchair_accessible'];
const TRAIL_FILTERS = [
  'cellphone_service',
  'difficulty',
  'distance',
  'duration',
  'elevation_gain',
  'quality',
  'season',
];
const COURT_TAGS = [
  ...COMMON_TAGS,
  'changing_room',
  'club',
  'court_adjacent_to_others',
  'equipment_rental',
  'floodlight',
  'hourly_chargeable',
  'indoor',
  'isolated_court',
  'lessons',
  'members_only',
  'outdoor',
  'shower',
];
const COURT_FILTERS = ['age', 'court_size', 'courts', 'quality', 'surface', 'type_of_place'];
const CURATED_PLACES_SPORTS = {
  // Running: routes and tracks.
  121: {
    tags: [
      ...COMMON_TAGS,
      'flat',
      'floodlight',
      'isolated_court',
      'outdoor',
      'indoor',
      'shower',
      'changing_room',
      'speed',
      'suitable_for_beginners',
    ],
    filters: [...TRAIL_FILTERS, 'surface', 'track_size'],
  },
  // Hiking: trails.
  168: {
    tags: [...COMMON_TAGS, 'flat', 'grocery_store', 'isolated_court', 'space_for_children', 'suitable_for_beginners'],
    filters: [...TRAIL_FILTERS, 'camping_accomodation', 'surface'],
  },
  // Mountain biking: trails and bike parks.
  388: {
    tags: [...COMMON_TAGS, 'equipment_rental', 'lessons', 'shower', 'suitable_for_beginners', 'washing_equipment'],
    filters: [...TRAIL_FILTERS, 'surface'],
  },
  // Road cycling: routes.
  385: {
    tags: [...COMMON_TAGS, 'flat', 'grocery_store', 'suitable_for_beginners'],
    filters: [...TRAIL_FILTERS, 'surface'],
  },
  // Tennis, padel, squash, badminton, table tennis: courts.
  357: { tags: [...COURT_TAGS, 'practice_wall'], filters: COURT_FILTERS },
  340: { tags: COURT_TAGS, filters: COURT_FILTERS },
  354: { tags: COURT_TAGS, filters: COURT_FILTERS },
  335: { tags: COURT_TAGS, filters: COURT_FILTERS },
  358: { tags: COURT_TAGS, filters: COURT_FILTERS },
  // Basketball, volleyball: courts (volleyball also on beaches).
  10: { tags: COURT_TAGS, filters: COURT_FILTERS },
  32: { tags: [...COURT_TAGS, 'beach'], filters: COURT_FILTERS },
  // Football, rugby, handball: fields.
  13: {
    tags: [...COMMON_TAGS, 'changing_room', 'club', 'floodlight', 'indoor', 'members_only', 'outdoor', 'shower'],
    filters: ['age', 'field_size', 'quality', 'surface', 'type_of_place'],
  },
  27: {
    tags: [...COMMON_TAGS, 'changing_room', 'club', 'floodlight', 'members_only', 'outdoor', 'shower'],
    filters: ['age', 'field_size', 'quality', 'surface', 'type_of_place'],
  },
  18: {
    tags: [...COMMON_TAGS, 'changing_room', 'club', 'indoor', 'members_only', 'outdoor', 'shower'],
    filters: ['age', 'field_size', 'quality', 'surface', 'type_of_place'],
  },
  // Swimming: pools and open water.
  274: {
    tags: [
      ...COMMON_TAGS,
      'beach',
      'changing_room',
      'club',
      'indoor',
      'kids-pool',
      'lessons',
      'lifeguard',
      'open-swim',
      'open-water',
      'outdoor',
      'security',
      'shower',
      'wave',
    ],
    filters: ['age', 'pool_size', 'quality', 'season', 'swim_area'],
  },
  // Climbing: walls and crags.
  161: {
    tags: [
      ...COMMON_TAGS,
      'changing_room',
      'club',
      'equipment_rental',
      'indoor',
      'lessons',
      'outdoor',
      'shower',
      'suitable_for_beginners',
    ],
    filters: ['age', 'cellphone_service', 'difficulty', 'quality', 'type_of_place'],
  },
  // Golf: courses.
  320: {
    tags: [...COMMON_TAGS, 'catering', 'club', 'equipment_rental', 'lessons', 'members_only', 'shower'],
    filters: ['number_holes', 'quality', 'season'],
  },
  // Skiing, snowboarding: resorts.
  174: {
    tags: [...COMMON_TAGS, 'catering', 'equipment_rental', 'lessons', 'security', 'suitable_for_beginners'],
    filters: ['difficulty', 'distance', 'elevation_gain', 'quality', 'season'],
  },
  185: {
    tags: [...COMMON_TAGS, 'catering', 'equipment_rental', 'lessons', 'security', 'suitable_for_beginners'],
    filters: ['difficulty', 'elevation_gain', 'quality', 'season'],
  },
  // Surfing: spots.
  296: {
    tags: [...COMMON_TAGS, 'beach', 'equipment_rental', 'lessons', 'lifeguard', 'shower', 'wave'],
    filters: ['difficulty', 'quality', 'season'],
  },
  // Horse riding: stables and rings.
  200: {
    tags: [...COMMON_TAGS, 'club', 'indoor', 'lessons', 'outdoor'],
    filters: ['age', 'difficulty', 'ring_size', 'quality'],
  },
  // Ice hockey: rinks.
  21: {
    tags: [...COMMON_TAGS, 'changing_room', 'club', 'equipment_rental', 'indoor', 'outdoor', 'shower'],
    filters: ['age', 'quality', 'rink_size', 'surface'],
  },
};

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------

const notes = [];
const note = (msg) => notes.push(msg);

function load(name) {
  return JSON.parse(readFileSync(join(refDir, name), 'utf8'));
}

function decodeEntities(s) {
  return s
    .replace(/&#0*39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function slugify(s) {
  return s
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/&/g, ' and ')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

function sortKeys(obj) {
  return Object.fromEntries(
    Object.keys(obj)
      .sort()
      .map((k) => [k, obj[k]]),
  );
}

function byId(a, b) {
  return a.id - b.id;
}

function assert(cond, msg) {
  if (!cond) throw new Error(`build-referentials: ${msg}`);
}

function write(name, data) {
  writeFileSync(join(outDir, name), `${JSON.stringify(data, null, 2)}\n`);
}

// ---------------------------------------------------------------------------
// builders
// ---------------------------------------------------------------------------

function buildUniverses(mock, usedIds) {
  const out = new Map();
  for (const u of mock.universes_fr) {
    const id = Number(u.id);
    assert(UNIVERSE_EN[id], `no English name for universe ${id}`);
    out.set(id, {
      id,
      names: { en: UNIVERSE_EN[id], fr: decodeEntities(u.name) },
    });
  }
  for (const id of usedIds) {
    if (out.has(id)) continue;
    assert(CURATED_UNIVERSES[id], `universe ${id} used but unnamed`);
    out.set(id, { id, names: { ...CURATED_UNIVERSES[id] } });
  }
  return [...out.values()].sort(byId);
}

function buildSports(docs, sdk, mock) {
  const sdkSports = sdk.sport_constants_fr;
  const docSports = new Map(docs.sports.map((s) => [s.id, s]));
  const mockSports = new Map(mock.sports_fr.map((s) => [s.id, s]));
  const ids = new Set([...docSports.keys(), ...mockSports.keys(), ...Object.values(sdkSports)]);

  const parentOf = new Map();
  for (const [parent, children] of Object.entries(HIERARCHY)) {
    for (const c of children) {
      assert(!parentOf.has(c), `sport ${c} has two parents`);
      parentOf.set(c, Number(parent));
    }
  }

  const sports = [];
  for (const id of [...ids].sort((a, b) => a - b)) {
    const doc = docSports.get(id);
    const mk = mockSports.get(id);
    const cur = CURATED_SPORT_NAMES[id];
    if (cur?.sdk) {
      assert(sdkSports[cur.sdk] === id, `SDK ${cur.sdk} is not sport ${id}`);
    }

    const names = {};
    for (const [lang, v] of Object.entries(doc?.translatedNames ?? {})) {
      assert(LANGS.includes(lang), `unknown language ${lang}`);
      names[lang] = v;
    }
    const en = doc?.en ?? cur?.en;
    const fr = mk ? decodeEntities(mk.name) : cur?.fr;
    if (doc?.en && cur?.en) note(`sport ${id}: curated en ignored`);
    if (names.fr && fr !== names.fr) {
      note(`sport ${id}: fr "${names.fr}" (docs) vs "${fr}" (mock); mock kept`);
    }
    assert(en && fr, `sport ${id} lacks en or fr`);
    names.en = en;
    names.fr = fr;

    let universeId = null;
    if (mk) universeId = mk.universid;
    if (doc?.universe) {
      const u = Number(doc.universe.split('/').pop());
      assert(universeId === null || universeId === u, `universe of ${id}`);
      universeId = u;
    }
    if (universeId === null && CURATED_SPORT_UNIVERSE[id] !== undefined) {
      universeId = CURATED_SPORT_UNIVERSE[id];
    }

    sports.push({
      id,
      slug: slugify(en),
      names: sortKeys(names),
      parentId: parentOf.get(id) ?? null,
      universeId,
      active: true,
      descriptions: {},
      vendorId: null,
      tags: [],
    });
  }

  // Children with no universe from any source inherit their parent's.
  const index = new Map(sports.map((s) => [s.id, s]));
  for (const s of sports) {
    if (s.parentId === null) continue;
    const p = index.get(s.parentId);
    assert(p, `parent ${s.parentId} of ${s.id} missing`);
    assert(p.parentId === null, `parent ${p.id} is itself a child`);
    if (s.universeId === null) s.universeId = p.universeId;
  }
  for (const id of Object.keys(CURATED_SPORT_UNIVERSE)) {
    assert(index.has(Number(id)), `curated universe for unknown sport ${id}`);
  }
  return sports;
}

/** Catalogue additions: legacy vendor ids, tags and descriptions (see CATALOGUE_VENDOR_ID). */
function addCatalogueFacts(sports, catalogue) {
  const index = new Map(sports.map((s) => [s.id, s]));
  const vendorIds = new Set();
  for (const [id, vendorId] of Object.entries(CATALOGUE_VENDOR_ID)) {
    const sport = index.get(Number(id));
    assert(sport, `vendor id for unknown sport ${id}`);
    const samples = catalogue.sports_seen.filter((c) => CATALOGUE_NAME_TO_SPORT_ID[c.name] === sport.id);
    assert(samples.length > 0, `sport ${id} has no catalogue sample`);
    const legacy = samples.map((c) => c.decathlon_id ?? c.id);
    assert(legacy.includes(vendorId), `vendor id ${vendorId} of sport ${id} not in the samples (${legacy})`);
    assert(!vendorIds.has(vendorId), `vendor id ${vendorId} twice`);
    vendorIds.add(vendorId);
    sport.vendorId = vendorId;
    const tags = new Set(samples.flatMap((c) => c.tags ?? []));
    for (const t of tags) assert(/^[a-z0-9]+(-[a-z0-9]+)*$/.test(t), `bad tag ${t}`);
    sport.tags = [...tags].sort();
  }
  for (const c of catalogue.sports_seen) {
    const id = CATALOGUE_NAME_TO_SPORT_ID[c.name];
    if (id !== undefined && c.tags) assert(index.get(id).vendorId !== null, `catalogue tags of ${c.name} unused`);
  }
  for (const [id, texts] of Object.entries(CURATED_SPORT_DESCRIPTIONS)) {
    const sport = index.get(Number(id));
    assert(sport, `description for unknown sport ${id}`);
    for (const lang of Object.keys(texts)) assert(LANGS.includes(lang), `unknown language ${lang}`);
    sport.descriptions = sortKeys(texts);
  }
}

function buildGroups(catalogue, sportIds) {
  const catById = new Map(catalogue.sports_seen.map((s) => [s.id, s]));
  const mapCat = (catId) => {
    const s = catById.get(catId);
    return s ? (CATALOGUE_NAME_TO_SPORT_ID[s.name] ?? null) : null;
  };
  const members = new Map(GROUPS.map((g) => [g.id, new Set(g.extra)]));

  for (const g of catalogue.groups_seen) {
    assert(members.has(g.id), `catalogue group ${g.id} not configured`);
    for (const catId of [...(g.sports ?? []), ...(g.sports_partial ?? [])]) {
      const id = mapCat(catId);
      if (id === null) note(`group ${g.id}: catalogue sport ${catId} unmapped`);
      else members.get(g.id).add(id);
    }
  }
  for (const s of catalogue.sports_seen) {
    if (s.group === undefined) continue;
    const id = CATALOGUE_NAME_TO_SPORT_ID[s.name];
    if (id === undefined) {
      note(`catalogue ${s.id} ${s.name} (group ${s.group}) unmapped`);
      continue;
    }
    assert(members.has(s.group), `catalogue group ${s.group} not configured`);
    members.get(s.group).add(id);
  }

  const seen = new Map();
  const groups = GROUPS.map((g) => {
    const ids = [...members.get(g.id)].sort((a, b) => a - b);
    for (const id of ids) {
      assert(sportIds.has(id), `group ${g.id}: unknown sport ${id}`);
      assert(!seen.has(id), `sport ${id} in groups ${seen.get(id)}+${g.id}`);
      seen.set(id, g.id);
    }
    return { id: g.id, slug: g.slug, names: { ...g.names }, sportIds: ids };
  });
  return groups.sort(byId);
}

function buildDatatypes(docs, sdk, mock) {
  const top25 = new Map(docs.datatypes_top25.map((d) => [d.id, d]));
  for (const [id, [rw, cum]] of Object.entries(SPEC_DATATYPE_FLAGS)) {
    const d = top25.get(Number(id));
    assert(d, `spec datatype ${id} not in docs`);
    assert(d.recordWay === rw, `recordWay of ${id}: spec vs docs`);
    assert((d.cumulable ?? false) === cum, `cumulable of ${id}: spec vs docs`);
  }

  const real = Object.entries(sdk.datatype_constants).filter(([, v]) => v < 10000);
  const byIdMap = new Map();
  for (const d of mock.datatypes) {
    byIdMap.set(d.id, {
      id: d.id,
      unit: d.unit ?? NULL_UNIT,
      name: decodeEntities(d.name),
      cumulable: d.cumulable,
    });
  }
  for (const [constName, id] of real) {
    if (byIdMap.has(id)) continue;
    const cur = CURATED_DATATYPES[id];
    assert(cur && cur.sdk === constName, `datatype ${id} (${constName})`);
    byIdMap.set(id, { id, unit: cur.unit, name: cur.en, cumulable: false });
  }

  const out = [];
  for (const d of [...byIdMap.values()].sort(byId)) {
    const flags = SPEC_DATATYPE_FLAGS[d.id];
    let recordWay = 0;
    let cumulable = d.cumulable;
    if (flags) {
      [recordWay, cumulable] = flags;
      if (cumulable !== d.cumulable) {
        note(`datatype ${d.id}: cumulable spec ${cumulable}, mock ${d.cumulable}`);
      }
    }
    const forced = FORCED_DATATYPES[d.id];
    if (forced) {
      assert(forced.unit === d.unit, `unit of datatype ${d.id}`);
      recordWay = forced.recordWay;
      cumulable = forced.cumulable;
    }
    out.push({
      id: d.id,
      unit: d.unit,
      names: { en: DATATYPE_NAME_FIX[d.id] ?? d.name },
      descriptions: { en: null },
      recordWay,
      cumulable,
      active: true,
    });
  }
  return out;
}

function buildPlaces(places, sportIds) {
  const tags = [...new Set([...places.tags_available_current, 'beach'])].sort();

  const filters = [];
  for (const slug of places.filters_numeric_current) {
    filters.push({
      slug,
      type: LEVEL_FILTERS.includes(slug) ? 'level' : 'number',
    });
  }
  for (const [slug, raw] of Object.entries(places.filters_enumerated_current)) {
    // Drop prose entries such as "etc. (open list; ...)".
    let values = raw.filter((v) => !/^etc\b/.test(v));
    if (slug === 'surface') values = [...values, ...SURFACE_EXTRA_VALUES];
    filters.push({ slug, type: 'enum', values: [...new Set(values)].sort() });
  }
  filters.sort((a, b) => a.slug.localeCompare(b.slug));
  const filterSlugs = new Set(filters.map((f) => f.slug));

  const perSport = new Map();
  for (const [key, val] of Object.entries(places.per_sport_examples)) {
    const placesId = Number(key.split(' ')[0]);
    const id = PLACES_SPORT_ID_MAP[placesId];
    if (id === undefined) {
      note(`places sport ${placesId} dropped: no tracking id`);
      continue;
    }
    assert(sportIds.has(id), `places sport ${placesId} -> ${id} unknown`);
    const entry = perSport.get(id) ?? { tags: new Set(), filters: new Set() };
    const exTags = Array.isArray(val) ? val : (val.tags ?? []);
    const exFilters = Array.isArray(val) ? [] : (val.filters ?? []);
    for (const t of exTags) {
      if (tags.includes(t)) entry.tags.add(t);
      else note(`places sport ${placesId}: unknown tag ${t} dropped`);
    }
    for (const f of exFilters) {
      const slug = PLACES_FILTER_RENAME[f] ?? f;
      if (filterSlugs.has(slug)) entry.filters.add(slug);
      else note(`places sport ${placesId}: unknown filter ${f} dropped`);
    }
    perSport.set(id, entry);
  }
  for (const [key, list] of Object.entries(CURATED_PLACES_SPORTS)) {
    const id = Number(key);
    assert(sportIds.has(id), `curated places sport ${id} unknown`);
    const entry = perSport.get(id) ?? { tags: new Set(), filters: new Set() };
    for (const t of list.tags) {
      assert(tags.includes(t), `curated places sport ${id}: unknown tag ${t}`);
      entry.tags.add(t);
    }
    for (const f of list.filters) {
      assert(filterSlugs.has(f), `curated places sport ${id}: unknown filter ${f}`);
      entry.filters.add(f);
    }
    perSport.set(id, entry);
  }
  const sports = {};
  for (const id of [...perSport.keys()].sort((a, b) => a - b)) {
    const e = perSport.get(id);
    sports[String(id)] = {
      tags: [...e.tags].sort(),
      filters: [...e.filters].sort(),
    };
  }
  return { tags, filters, sports };
}

// ---------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------

const docs = load('tracking-referentials-from-docs.json');
const sdk = load('sportstrackingdata-php-sdk-constants.json');
const mock = load('linkdata-v1-referentials-mock.json');
const catalogue = load('sports-catalogue-samples.json');
const places = load('sportplaces-tags-filters.json');

const sports = buildSports(docs, sdk, mock);
addCatalogueFacts(sports, catalogue);
const sportIds = new Set(sports.map((s) => s.id));
const slugs = new Set(sports.map((s) => s.slug));
assert(slugs.size === sports.length, 'duplicate sport slug');
for (const s of sports) {
  assert(/^[a-z0-9]+(-[a-z0-9]+)*$/.test(s.slug), `bad slug ${s.slug}`);
  assert(!/^\d+$/.test(s.slug), `numeric slug ${s.slug}`);
}

const universes = buildUniverses(mock, new Set(sports.map((s) => s.universeId).filter((u) => u !== null)));
const groups = buildGroups(catalogue, sportIds);
const datatypes = buildDatatypes(docs, sdk, mock);
const placesTagsFilters = buildPlaces(places, sportIds);

mkdirSync(outDir, { recursive: true });
write('sports.json', sports);
write('groups.json', groups);
write('universes.json', universes);
write('datatypes.json', datatypes);
write('places-tags-filters.json', placesTagsFilters);

for (const n of notes) console.error(`note: ${n}`);
console.log(
  `sports ${sports.length}, groups ${groups.length}, universes ${universes.length}, ` +
    `datatypes ${datatypes.length}, place tags ${placesTagsFilters.tags.length}, ` +
    `place filters ${placesTagsFilters.filters.length}, ` +
    `per-sport place lists ${Object.keys(placesTagsFilters.sports).length} -> ${outDir}`,
);
