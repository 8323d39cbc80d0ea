import test from 'ava';
import { startTrackingApi } from './helpers/tracking.ts';

const api = await startTrackingApi();
const u = await api.user();
test.after.always(() => api.close());

const { db } = api.database;
const STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;
const ALL_LANGUAGES = ['de', 'en', 'es', 'fr', 'hu', 'it', 'nl', 'pl', 'pt', 'ru', 'zh'];

/** Every member of every page of a collection, following hydra:next. */
async function allMembers(path: string) {
  const members = [];
  let next: string | undefined = path;
  for (let pages = 0; next && pages < 50; pages++) {
    const res = await api.call('GET', next.replace(/^\/v2/, ''), u);
    if (res.status !== 200) throw new Error(`${next}: ${res.status}`);
    members.push(...res.body['hydra:member']);
    next = res.body['hydra:view']['hydra:next'];
  }
  return members;
}

test('referentials need an x-api-key and a bearer token (401 in the Hydra format)', async (t) => {
  for (const path of [
    '/sports',
    '/sports/121',
    '/datatypes',
    '/datatypes/181',
    '/universes',
    '/device_models',
    '/firmwares',
    '/firmware',
    '/connectors/1',
  ]) {
    const noToken = await api.call('GET', path, null);
    t.is(noToken.status, 401, path);
    t.is(noToken.body['@type'], 'hydra:Error');
    const noKey = await api.call('GET', path, u, { headers: { 'x-api-key': '' } });
    t.is(noKey.status, 401, path);
    const badToken = await api.call('GET', path, null, { headers: { authorization: 'Bearer abc' } });
    t.is(badToken.status, 401, path);
  }
});

test('/sports pages the 94 sports of the shared referential, 30 per page, in id order', async (t) => {
  const first = await api.call('GET', '/sports', u);
  t.is(first.status, 200);
  t.regex(first.headers.get('content-type') ?? '', /^application\/ld\+json/);
  t.like(first.body, { '@context': '/v2/contexts/Sport', '@id': '/v2/sports', '@type': 'hydra:Collection' });
  t.is(first.body['hydra:totalItems'], 94);
  t.is(first.body['hydra:member'].length, 30);
  t.like(first.body['hydra:view'], {
    '@id': '/v2/sports',
    '@type': 'hydra:PartialCollectionView',
    'hydra:first': '/v2/sports?page=1&limit=30',
    'hydra:last': '/v2/sports?page=4&limit=30',
    'hydra:next': '/v2/sports?page=2&limit=30',
  });
  t.deepEqual(
    first.body['hydra:search']['hydra:mapping']
      .map((m: { variable: string }) => m.variable)
      .filter((v: string) => v !== 'page' && v !== 'limit'),
    ['active'],
  );
  const last = await api.call('GET', '/sports?page=4', u);
  t.is(last.body['hydra:member'].length, 4);
  t.is(last.body['hydra:view']['hydra:next'], undefined);
  t.is(last.body['hydra:view']['hydra:previous'], '/v2/sports?page=3&limit=30');
  const beyond = await api.call('GET', '/sports?page=5', u);
  t.is(beyond.status, 200);
  t.deepEqual(beyond.body['hydra:member'], []);
  t.is(beyond.body['hydra:totalItems'], 94);

  const all = await allMembers('/v2/sports');
  t.is(all.length, 94);
  const ids = all.map((s: { id: number }) => s.id);
  t.deepEqual(
    ids,
    [...ids].sort((a, b) => a - b),
  );
  t.is(new Set(ids).size, 94);
  // Every sport the spec names, with its English name.
  const byId = new Map(all.map((s: { id: number }) => [s.id, s]));
  for (const id of [176, 183, 260, 326, 177, 335, 10, 381, 360, 264, 35, 265, 161, 397, 404, 402, 79, 91, 13, 320, 18])
    t.truthy(byId.get(id), `sport ${id}`);
  for (const id of [168, 20, 401, 200, 110, 98, 367, 405, 273, 366, 45, 388, 153, 184, 114, 127, 340, 7, 109, 385])
    t.truthy(byId.get(id), `sport ${id}`);
  for (const id of [263, 398, 27, 121]) t.truthy(byId.get(id), `sport ${id}`);

  const limited = await api.call('GET', '/sports?limit=100', u);
  t.is(limited.body['hydra:member'].length, 94);
  t.is(limited.body['hydra:view']['hydra:next'], undefined);
  const small = await api.call('GET', '/sports?limit=10&page=2', u);
  t.deepEqual(
    small.body['hydra:member'].map((s: { id: number }) => s.id),
    ids.slice(10, 20),
  );
  t.is(small.body['hydra:view']['hydra:next'], '/v2/sports?limit=10&page=3');
});

test('a Sport has the fields of the spec and its names in every language the referential has', async (t) => {
  const res = await api.call('GET', '/sports/121', u);
  t.is(res.status, 200);
  t.deepEqual(Object.keys(res.body).sort(), [
    '@context',
    '@id',
    '@type',
    'active',
    'createdAt',
    'id',
    'translatedNames',
    'universe',
    'updatedAt',
  ]);
  t.like(res.body, {
    '@context': '/v2/contexts/Sport',
    '@id': '/v2/sports/121',
    '@type': 'Sport',
    id: 121,
    universe: '/v2/universes/4',
    active: true,
    translatedNames: { en: 'Running', fr: 'Course à pied' },
  });
  t.regex(res.body.createdAt, STAMP);
  t.regex(res.body.updatedAt, STAMP);

  const paragliding = await api.call('GET', '/sports/7', u);
  t.deepEqual(Object.keys(paragliding.body.translatedNames).sort(), ALL_LANGUAGES);
  t.is(paragliding.body.translatedNames.zh, '滑翔伞');
  // Each sport carries every language its row has, at least English and French.
  const rows = await db.selectFrom('sports').select(['id', 'names']).execute();
  const all = await allMembers('/v2/sports');
  for (const row of rows) {
    const served = all.find((s: { id: number }) => s.id === row.id);
    t.deepEqual(served.translatedNames, row.names, `sport ${row.id}`);
    t.truthy(row.names.en && row.names.fr);
    t.regex(served.universe, /^\/v2\/universes\/\d+$/);
  }
});

test.serial('/sports filters on `active` (0, 1, true, false)', async (t) => {
  const inactive = 405;
  await db.updateTable('sports').set({ active: false }).where('id', '=', inactive).execute();
  try {
    for (const v of ['1', 'true']) {
      const res = await api.call('GET', `/sports?active=${v}&limit=100`, u);
      t.is(res.body['hydra:totalItems'], 93, v);
      t.false(res.body['hydra:member'].some((s: { id: number }) => s.id === inactive));
    }
    for (const v of ['0', 'false']) {
      const res = await api.call('GET', `/sports?active=${v}`, u);
      t.is(res.body['hydra:totalItems'], 1, v);
      t.like(res.body['hydra:member'][0], { id: inactive, active: false });
    }
    t.is((await api.call('GET', '/sports?limit=100', u)).body['hydra:totalItems'], 94, 'no filter: all');
    t.is((await api.call('GET', `/sports/${inactive}`, u)).body.active, false);
  } finally {
    await db.updateTable('sports').set({ active: true }).where('id', '=', inactive).execute();
  }
});

test('bad list parameters are 422 naming the parameter; unknown ids are 404', async (t) => {
  for (const [query, param] of [
    ['active=yes', 'active'],
    ['active=2', 'active'],
    ['page=0', 'page'],
    ['page=abc', 'page'],
    ['page=10001', 'page'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
  ]) {
    const res = await api.call('GET', `/sports?${query}`, u);
    t.is(res.status, 422, query);
    t.is(res.body['@type'], 'ConstraintViolationList');
    t.deepEqual(
      res.body.violations.map((v: { propertyPath: string }) => v.propertyPath),
      [param],
    );
  }
  for (const path of [
    '/sports/999999',
    '/sports/0',
    '/sports/abc',
    '/sports/1.5',
    '/sports/99999999999',
    '/datatypes/999999',
    '/universes/999',
    '/device_models/999',
    '/firmwares/999',
    '/firmware/999',
    '/connectors/999',
  ]) {
    const res = await api.call('GET', path, u);
    t.is(res.status, 404, path);
    t.is(res.body['@type'], 'hydra:Error', path);
  }
});

test('/datatypes: every datatype, with unit, recordWay and cumulable', async (t) => {
  const count = await db
    .selectFrom('datatypes')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  const list = await api.call('GET', '/datatypes', u);
  t.is(list.status, 200);
  t.is(list.body['hydra:totalItems'], Number(count.n));
  t.is(list.body['hydra:member'].length, 30);
  t.is((await allMembers('/v2/datatypes')).length, Number(count.n));

  const weight = await api.call('GET', '/datatypes/181', u);
  t.deepEqual(weight.body, {
    '@context': '/v2/contexts/Datatype',
    '@id': '/v2/datatypes/181',
    '@type': 'Datatype',
    id: 181,
    unit: 'g',
    translatedNames: { en: 'Weight' },
    translatedDescriptions: { en: null },
    recordWay: 0,
    cumulable: false,
    active: true,
    createdAt: weight.body.createdAt,
    updatedAt: weight.body.updatedAt,
  });
  t.regex(weight.body.createdAt, STAMP);
  // The spec's table of main datatypes.
  for (const [id, unit, recordWay, cumulable] of [
    [24, 's', 1, true],
    [5, 'm', 1, true],
    [9, 'm/h', 1, false],
    [6, 'm/h', 0, false],
    [1, 'bpm', 0, false],
  ] as const) {
    const res = await api.call('GET', `/datatypes/${id}`, u);
    t.like(res.body, { id, unit, recordWay, cumulable }, `datatype ${id}`);
  }
  const inactive = await api.call('GET', '/datatypes?active=0', u);
  t.is(inactive.body['hydra:totalItems'], 0);
});

test.serial('/universes: names and the IRIs of their sports; active when one of its sports is', async (t) => {
  const list = await api.call('GET', '/universes', u);
  t.is(list.status, 200);
  t.is(list.body['hydra:totalItems'], 11);
  const universes = list.body['hydra:member'];
  const sportIris = universes.flatMap((x: { sports: string[] }) => x.sports);
  t.is(sportIris.length, 94, 'each sport is in one universe');
  t.is(new Set(sportIris).size, 94);
  const four = await api.call('GET', '/universes/4', u);
  t.like(four.body, { '@id': '/v2/universes/4', '@type': 'Universe', id: 4, active: true });
  t.true(four.body.sports.includes('/v2/sports/121'));
  t.deepEqual(Object.keys(four.body.translatedNames).sort(), ['en', 'fr']);

  // Universe 5 (motor sports) has no sport in the referential: it is not active.
  t.like((await api.call('GET', '/universes/5', u)).body, { sports: [], active: false });
  t.deepEqual(
    (await api.call('GET', '/universes?active=0', u)).body['hydra:member'].map((x: { id: number }) => x.id),
    [5],
  );
  const members = (await db.selectFrom('sports').select('id').where('universe_id', '=', 1).execute()).map((s) => s.id);
  await db.updateTable('sports').set({ active: false }).where('universe_id', '=', 1).execute();
  try {
    t.is((await api.call('GET', '/universes/1', u)).body.active, false);
    const inactive = await api.call('GET', '/universes?active=0', u);
    t.deepEqual(
      inactive.body['hydra:member'].map((x: { id: number }) => x.id),
      [1, 5],
    );
    t.is((await api.call('GET', '/universes?active=1', u)).body['hydra:totalItems'], 9);
  } finally {
    await db.updateTable('sports').set({ active: true }).where('id', 'in', members).execute();
  }
});

test('/device_models and /connectors', async (t) => {
  const models = await api.call('GET', '/device_models', u);
  t.is(models.body['hydra:totalItems'], 6);
  const watch = await api.call('GET', '/device_models/1', u);
  t.like(watch.body, {
    '@context': '/v2/contexts/DeviceModel',
    '@id': '/v2/device_models/1',
    '@type': 'DeviceModel',
    id: 1,
    brand: 'generic',
    serialRange: null,
    active: true,
    translatedNames: { en: 'GPS watch', fr: 'Montre GPS' },
  });
  t.regex(watch.body.updatedAt, STAMP);

  const connectors = await api.call('GET', '/connectors', u);
  t.is(connectors.body['hydra:totalItems'], 6);
  const file = await api.call('GET', '/connectors/3', u);
  t.like(file.body, {
    '@context': '/v2/contexts/Connector',
    '@id': '/v2/connectors/3',
    '@type': 'Connector',
    id: 3,
    connector: 'file-import',
    version: '1',
    active: true,
  });
  t.is(file.body.translatedNames.en, 'File import (GPX, TCX, FIT)');
  t.is((await api.call('GET', '/connectors?active=false', u)).body['hydra:totalItems'], 0);
});

test('/firmwares (and its v2.26 alias /firmware): model IRI, filters model, isLastFirmware, active', async (t) => {
  const list = await api.call('GET', '/firmwares', u);
  t.is(list.body['hydra:totalItems'], 7);
  const second = await api.call('GET', '/firmwares/2', u);
  t.like(second.body, {
    '@context': '/v2/contexts/Firmware',
    '@id': '/v2/firmwares/2',
    '@type': 'Firmware',
    id: 2,
    model: '/v2/device_models/1',
    version: '2.0.0',
    revisionDate: '2025-03-01T00:00:00+00:00',
    isLastFirmware: true,
    active: true,
  });
  const alias = await api.call('GET', '/firmware/2', u);
  t.is(alias.status, 200);
  t.deepEqual(alias.body, second.body, 'same item, same IRI');
  const aliasList = await api.call('GET', '/firmware?model=/v2/device_models/1', u);
  t.is(aliasList.body['@id'], '/v2/firmware');
  t.deepEqual(
    aliasList.body['hydra:member'].map((f: { '@id': string }) => f['@id']),
    ['/v2/firmwares/1', '/v2/firmwares/2'],
  );

  const ids = async (query: string) =>
    (await api.call('GET', `/firmwares?${query}`, u)).body['hydra:member'].map((f: { id: number }) => f.id);
  t.deepEqual(await ids('model=/v2/device_models/1'), [1, 2]);
  t.deepEqual(await ids('model=1'), [1, 2], 'a bare id, as API Platform takes');
  t.deepEqual(await ids('model[]=/v2/device_models/1&model[]=/v2/device_models/2'), [1, 2, 3]);
  t.deepEqual(await ids('model=1&model=3'), [1, 2, 4]);
  t.deepEqual(await ids('isLastFirmware=1'), [2, 3, 4, 5, 6, 7]);
  t.deepEqual(await ids('isLastFirmware=false&model=1'), [1]);
  t.deepEqual(await ids('model=/v2/device_models/999'), []);
  t.deepEqual(await ids('active=0'), []);
  for (const query of ['model=/v2/sports/1', 'model=abc', 'isLastFirmware=maybe']) {
    const res = await api.call('GET', `/firmwares?${query}`, u);
    t.is(res.status, 422, query);
    t.is(res.body.violations[0].propertyPath, query.split('=')[0]);
  }
});
