import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { ConfigError } from '../shared/config.ts';
import datatypes from '../shared/referentials/datatypes.json' with { type: 'json' };
import { loadConfig } from '../shared/services/config.ts';
import { DATATYPE } from '../shared/tracking/activities/data.ts';
import { bestEfforts } from '../shared/tracking/records/best-efforts.ts';
import { recordDirection, recordScore } from '../shared/tracking/records/record-ways.ts';
import {
  applyRecordsSettings,
  DEFAULT_RECORDS_SETTINGS,
  familyOf,
  readRecordsSettingsFile,
  recordsSettingsFile,
  settingsFingerprint,
} from '../shared/tracking/records/settings.ts';
import { content, recordWays, running } from './helpers/record-content.ts';

// ---- settings ----

test('the default families are valid: each sport in one family, distances ascending', (t) => {
  t.deepEqual(applyRecordsSettings({ families: {} }), DEFAULT_RECORDS_SETTINGS);
  for (const family of Object.values(DEFAULT_RECORDS_SETTINGS.families))
    t.deepEqual(
      family.distances,
      [...family.distances].sort((a, b) => a - b),
    );
  t.deepEqual(running.distances, [400, 804, 1000, 1609, 3218, 5000, 10000, 21097, 42195]);
  t.deepEqual(DEFAULT_RECORDS_SETTINGS.families.cycling?.distances, [5000, 10000, 20000, 40000, 50000, 100000, 160900]);
});

test('a settings file overrides fields of a family, adds one, removes one with null', (t) => {
  const settings = applyRecordsSettings({
    families: {
      running: { distances: [5000, 1000] },
      skating: null,
      climbing: { sports: [161], distances: [100], maxSpeed: 2 },
    },
  });
  t.deepEqual(settings.families.running, { ...running, distances: [1000, 5000] });
  t.false('skating' in settings.families);
  t.deepEqual(settings.families.climbing, { sports: [161], distances: [100], maxSpeed: 2 });
  t.throws(() => applyRecordsSettings({ families: { rowing: { distances: [500] } } }), {
    message: /families.rowing: a new family needs sports, distances and maxSpeed/,
  });
  t.throws(() => applyRecordsSettings({ families: { walking: { sports: [121] } } }), {
    message: /sport 121 is in two families: running and walking/,
  });
  for (const bad of [
    { families: { running: { distances: [0] } } },
    { families: { running: { distances: [1.5] } } },
    { families: { running: { distances: [400, 400] } } },
    { families: { running: { maxSpeed: 0 } } },
    { families: { running: { speed: 3 } } },
    { families: { 'Bad Name': null } },
    { distances: [] },
  ])
    t.false(recordsSettingsFile.safeParse(bad).success, JSON.stringify(bad));
});

test('RECORDS_FAMILIES_FILE: a missing or bad file stops the start, naming the variable', (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'records-settings-'));
  const good = path.join(dir, 'good.json');
  writeFileSync(good, JSON.stringify({ families: { running: { distances: [1000] } } }));
  t.is(loadConfig({ RECORDS_FAMILIES_FILE: good }).RECORDS_FAMILIES_FILE, good);
  t.deepEqual(readRecordsSettingsFile(good).families.running?.distances, [1000]);
  const broken = path.join(dir, 'broken.json');
  writeFileSync(broken, '{"families": {"running": {"distances": [-1]}}}');
  const notJson = path.join(dir, 'not.json');
  writeFileSync(notJson, 'running: 1000');
  for (const file of [broken, notJson, path.join(dir, 'missing.json')])
    t.throws(() => loadConfig({ RECORDS_FAMILIES_FILE: file }), {
      instanceOf: ConfigError,
      message: /RECORDS_FAMILIES_FILE: .*(families\.running\.distances\.0|JSON)/,
    });
});

test('a sport takes the family of its nearest listed ancestor', (t) => {
  const settings = DEFAULT_RECORDS_SETTINGS;
  t.is(familyOf(settings, [121]), running);
  t.is(familyOf(settings, [126, 121]), running, 'trail (child of running)');
  t.is(familyOf(settings, [389, 388]), settings.families.cycling ?? null, 'cross-country MTB');
  t.is(familyOf(settings, [168]), settings.families.walking ?? null);
  t.is(familyOf(settings, [13]), null, 'football: no distance records');
  const own = applyRecordsSettings({ families: { track: { sports: [122], distances: [100, 200], maxSpeed: 12.5 } } });
  t.deepEqual(familyOf(own, [122, 121])?.distances, [100, 200], 'a child listed in its own family');
});

test('the settings fingerprint changes with the settings and the record ways only', (t) => {
  const a = settingsFingerprint(DEFAULT_RECORDS_SETTINGS, recordWays);
  t.is(a, settingsFingerprint(applyRecordsSettings({ families: {} }), new Map([...recordWays].reverse())));
  t.not(a, settingsFingerprint(applyRecordsSettings({ families: { running: { distances: [1000] } } }), recordWays));
  t.not(a, settingsFingerprint(DEFAULT_RECORDS_SETTINGS, new Map([...recordWays, [2, 1]])));
  t.regex(a, /^[0-9a-f]{12}$/);
});

// ---- record ways ----

test('recordWay 1: the highest summary is the best; 0 and anything else: not a record', (t) => {
  t.is(recordDirection(1), 'highest');
  for (const way of [0, 2, -1, undefined]) t.is(recordDirection(way), null);
  t.true(recordScore(10, 'highest') > recordScore(9, 'highest'));
  t.true(recordScore(9, 'lowest') > recordScore(10, 'lowest'));
});

test('all: one effort per summary datatype whose recordWay is 1, finite values only', (t) => {
  const summaries = new Map<number, number>([
    [DATATYPE.DISTANCE, 10_000],
    [DATATYPE.DURATION, 3000],
    [DATATYPE.HR_AVG, 150],
    [DATATYPE.HR_MAX, 185],
    [DATATYPE.ELEVATION_MAX, -12],
    [DATATYPE.CALORIES, Number.NaN],
    [9999, 5],
  ]);
  const efforts = bestEfforts(content({ summaries, sportId: 13 }), { recordWays, family: null });
  t.deepEqual(efforts, [
    { type: 'all', datatypeId: DATATYPE.HR_MAX, value: 185, score: 185 },
    { type: 'all', datatypeId: DATATYPE.DISTANCE, value: 10_000, score: 10_000 },
    { type: 'all', datatypeId: DATATYPE.ELEVATION_MAX, value: -12, score: -12 },
    { type: 'all', datatypeId: DATATYPE.DURATION, value: 3000, score: 3000 },
  ]);
  t.deepEqual(
    datatypes.filter((d) => d.recordWay === 1).map((d) => d.id),
    [3, 5, 7, 9, 15, 18, 19, 23, 24, 99, 103, 206],
    'the referential records',
  );
});
