import test from 'ava';
import { sql } from 'kysely';
import { DomainError } from '../shared/errors.ts';
import { createUserDevice, updateUserDevice } from '../shared/tracking/devices/store.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

const api = await startTrackingApi();
test.after.always(() => api.close());
const { db } = api.database;

const STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;
let serials = 0;
/** A serial no other test uses. */
const newSerial = () => `SN-${process.pid}-${++serials}`;

const watch = (overrides: Record<string, unknown> = {}) => ({
  serial: newSerial(),
  model: '/v2/device_models/1',
  firmware: '/v2/firmwares/2',
  ...overrides,
});

async function register(user: TrackingTestUser, overrides: Record<string, unknown> = {}) {
  const res = await api.call('POST', '/user_devices', user, { body: watch(overrides) });
  if (res.status !== 201) throw new Error(`POST /user_devices: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

function stripContext(item: Record<string, unknown>) {
  const { '@context': _, ...rest } = item;
  return rest;
}

const violations = (body: { violations: { propertyPath: string }[] }) =>
  body.violations.map((v) => v.propertyPath).sort();

test('every device call needs an x-api-key and a bearer token (401 in the Hydra format)', async (t) => {
  const u = await api.user();
  const device = await register(u);
  for (const [method, path] of [
    ['GET', '/user_devices'],
    ['POST', '/user_devices'],
    ['GET', `/user_devices/${device.id}`],
    ['PUT', `/user_devices/${device.id}`],
    ['DELETE', `/user_devices/${device.id}`],
  ] as const) {
    const body = method === 'POST' || method === 'PUT' ? { body: watch() } : {};
    const noToken = await api.call(method, path, null, body);
    t.is(noToken.status, 401, `${method} ${path}`);
    t.is(noToken.body['@type'], 'hydra:Error');
    const noKey = await api.call(method, path, u, { ...body, headers: { 'x-api-key': '' } });
    t.is(noKey.status, 401, `${method} ${path} without key`);
    const badToken = await api.call(method, path, null, { ...body, headers: { authorization: 'Bearer x.y.z' } });
    t.is(badToken.status, 401, `${method} ${path} bad token`);
  }
  t.is((await api.call('GET', `/user_devices/${device.id}`, u)).status, 200, 'still there');
});

test('POST registers a device of the caller: 201, Location, the fields of the spec', async (t) => {
  const u = await api.user();
  const serial = newSerial();
  const res = await api.call('POST', '/user_devices', u, {
    body: {
      serial,
      model: '/v2/device_models/1',
      firmware: '/v2/firmwares/2',
      user: `/v2/users/${u.ldid}`,
      ownership: 1,
      lastConnectedAt: '2025-06-01T10:00:00+02:00',
    },
  });
  t.is(res.status, 201);
  t.regex(res.headers.get('content-type') ?? '', /^application\/ld\+json/);
  t.deepEqual(Object.keys(res.body).sort(), [
    '@context',
    '@id',
    '@type',
    'createdAt',
    'firmware',
    'id',
    'lastConnectedAt',
    'model',
    'ownership',
    'serial',
    'updatedAt',
    'user',
  ]);
  t.like(res.body, {
    '@context': '/v2/contexts/UserDevice',
    '@id': `/v2/user_devices/${res.body.id}`,
    '@type': 'UserDevice',
    serial,
    model: '/v2/device_models/1',
    firmware: '/v2/firmwares/2',
    user: `/v2/users/${u.ldid}`,
    ownership: 1,
    lastConnectedAt: '2025-06-01T08:00:00+00:00',
  });
  t.regex(res.body.createdAt, STAMP);
  t.is(res.headers.get('location'), `${api.config.PUBLIC_URL}/v2/user_devices/${res.body.id}`);
  const got = await api.call('GET', `/user_devices/${res.body.id}`, u);
  t.deepEqual(got.body, res.body);

  // `user` defaults to the caller, ownership to 0, lastConnectedAt to null; absolute IRIs and the
  // v2.26 firmware path are IRIs too; read-only members are ignored.
  const minimal = await api.call('POST', '/user_devices', u, {
    body: {
      '@type': 'UserDevice',
      id: 'forged',
      createdAt: '2000-01-01T00:00:00+00:00',
      serial: 'a-Z-0-9',
      model: 'https://elsewhere.test/v2/device_models/2',
      firmware: '/v2/firmware/3',
    },
  });
  t.is(minimal.status, 201);
  t.like(minimal.body, {
    user: `/v2/users/${u.ldid}`,
    model: '/v2/device_models/2',
    firmware: '/v2/firmwares/3',
    ownership: 0,
    lastConnectedAt: null,
  });
  t.not(minimal.body.id, 'forged');
  t.regex(minimal.body.id, /^[0-9a-f]{32}$/);
});

test('POST refuses invalid devices with a 422 naming each field', async (t) => {
  const u = await api.user();
  const other = await api.user();
  const cases: [Record<string, unknown>, string[]][] = [
    [{ serial: undefined }, ['serial']],
    [{ serial: '' }, ['serial']],
    [{ serial: 'has space' }, ['serial']],
    [{ serial: 'é' }, ['serial']],
    [{ serial: 'a_b' }, ['serial']],
    [{ serial: 'x'.repeat(129) }, ['serial']],
    [{ serial: 42 }, ['serial']],
    [{ model: undefined }, ['model']],
    [{ model: '/v2/device_models/999' }, ['model']],
    [{ model: '1' }, ['model']],
    [{ model: '/v2/sports/1' }, ['model']],
    [{ firmware: undefined }, ['firmware']],
    [{ firmware: '/v2/firmwares/999' }, ['firmware']],
    [{ firmware: '/v2/firmwares/3' }, ['firmware']],
    [{ firmware: '/v2/firmwares/abc' }, ['firmware']],
    [{ model: '/v2/device_models/999', firmware: '/v2/firmwares/999' }, ['firmware', 'model']],
    [{ user: `/v2/users/${other.ldid}` }, ['user']],
    [{ user: 'me' }, ['user']],
    [{ ownership: -1 }, ['ownership']],
    [{ ownership: 1.5 }, ['ownership']],
    [{ ownership: 2 ** 31 }, ['ownership']],
    [{ ownership: '1' }, ['ownership']],
    [{ ownership: null }, ['ownership']],
    [{ lastConnectedAt: '2025-06-01T10:00:00' }, ['lastConnectedAt']],
    [{ lastConnectedAt: '1800-01-01T00:00:00Z' }, ['lastConnectedAt']],
    [{ brand: 'x', serialNumber: 'y' }, ['brand', 'serialNumber']],
  ];
  for (const [overrides, fields] of cases) {
    const res = await api.call('POST', '/user_devices', u, { body: watch(overrides) });
    t.is(res.status, 422, JSON.stringify(overrides));
    t.is(res.body['@type'], 'ConstraintViolationList');
    t.deepEqual(violations(res.body), fields, JSON.stringify(overrides));
  }
  const mismatch = await api.call('POST', '/user_devices', u, { body: watch({ firmware: '/v2/firmwares/3' }) });
  t.regex(mismatch.body.violations[0].message, /\/v2\/firmwares\/3 is a firmware of \/v2\/device_models\/2/);
  t.is((await api.call('POST', '/user_devices', u, { body: watch({ serial: 'x'.repeat(128) }) })).status, 201);
  t.is((await api.call('GET', '/user_devices', u)).body['hydra:totalItems'], 1, 'only the valid one was stored');
});

test('a user registers a model and serial once; the same serial on another model or for another user is fine', async (t) => {
  const u = await api.user();
  const other = await api.user();
  const first = await register(u, { serial: 'SAME-1' });
  const again = await api.call('POST', '/user_devices', u, { body: watch({ serial: 'SAME-1' }) });
  t.is(again.status, 422);
  t.deepEqual(violations(again.body), ['serial']);
  t.true(again.body.violations[0].message.includes(first['@id']));
  t.is(
    (await api.call('POST', '/user_devices', u, { body: watch({ serial: 'SAME-1', firmware: '/v2/firmwares/1' }) }))
      .status,
    422,
    'another firmware of the same model is the same device',
  );
  t.is(
    (await register(u, { serial: 'SAME-1', model: '/v2/device_models/2', firmware: '/v2/firmwares/3' })).serial,
    'SAME-1',
  );
  t.is((await register(other, { serial: 'SAME-1' })).serial, 'SAME-1');
  t.is((await register(u, { serial: 'same-1' })).serial, 'same-1', 'serials are case-sensitive');

  const concurrent = await Promise.all(
    Array.from({ length: 5 }, () => api.call('POST', '/user_devices', u, { body: watch({ serial: 'RACE' }) })),
  );
  t.deepEqual(concurrent.map((r) => r.status).sort(), [201, 422, 422, 422, 422]);
});

test("another user's device is 404 (never 403) for GET, PUT and DELETE, and stays untouched", async (t) => {
  const owner = await api.user();
  const intruder = await api.user();
  const device = await register(owner);
  for (const [method, body] of [
    ['GET', undefined],
    ['PUT', { ownership: 5 }],
    ['DELETE', undefined],
  ] as const) {
    const res = await api.call(method, `/user_devices/${device.id}`, intruder, body ? { body } : {});
    t.is(res.status, 404, method);
    t.is(res.body['@type'], 'hydra:Error');
  }
  for (const id of ['0'.repeat(32), 'nope', 'x'.repeat(65)])
    t.is((await api.call('GET', `/user_devices/${id}`, owner)).status, 404, id);
  const still = await api.call('GET', `/user_devices/${device.id}`, owner);
  t.deepEqual(still.body, device);
});

test('the list holds only the caller’s devices, oldest first, with the user, serial, model and firmware filters', async (t) => {
  const u = await api.user();
  const other = await api.user();
  await register(other, { serial: 'SHARED' });
  const a = await register(u, { serial: 'SHARED' });
  const b = await register(u, { serial: 'B-2', model: '/v2/device_models/2', firmware: '/v2/firmwares/3' });
  const c = await register(u, { serial: 'C-3', firmware: '/v2/firmwares/1' });

  const all = await api.call('GET', '/user_devices', u);
  t.is(all.status, 200);
  t.like(all.body, { '@context': '/v2/contexts/UserDevice', '@id': '/v2/user_devices', 'hydra:totalItems': 3 });
  t.deepEqual(
    all.body['hydra:member'].map((d: { id: string }) => d.id),
    [a.id, b.id, c.id],
  );
  t.deepEqual(all.body['hydra:member'][0], stripContext(a), 'a member is the item without its @context');
  t.deepEqual(
    all.body['hydra:search']['hydra:mapping']
      .map((m: { variable: string }) => m.variable)
      .filter((v: string) => v !== 'page' && v !== 'limit'),
    [
      'user',
      'user[]',
      'serial',
      'serial[]',
      'model',
      'model[]',
      'firmware',
      'firmware[]',
      'updatedAt[after]',
      'updatedAt[before]',
      'updatedAt[strictly_after]',
      'updatedAt[strictly_before]',
      'order[updatedAt]',
    ],
  );

  const ids = async (query: string) => {
    const res = await api.call('GET', `/user_devices?${query}`, u);
    t.is(res.status, 200, query);
    return res.body['hydra:member'].map((d: { id: string }) => d.id);
  };
  t.deepEqual(await ids(`user=/v2/users/${u.ldid}`), [a.id, b.id, c.id]);
  t.deepEqual(await ids(`user=${u.ldid}`), [a.id, b.id, c.id]);
  t.deepEqual(await ids(`user[]=/v2/users/${other.ldid}`), [], "another user's devices are never listed");
  t.deepEqual(await ids(`user[]=/v2/users/${other.ldid}&user[]=/v2/users/${u.ldid}`), [a.id, b.id, c.id]);
  t.deepEqual(await ids('serial=SHARED'), [a.id]);
  t.deepEqual(await ids('serial[]=SHARED&serial[]=C-3'), [a.id, c.id]);
  t.deepEqual(await ids('serial=shared'), []);
  t.deepEqual(await ids('model=/v2/device_models/1'), [a.id, c.id]);
  t.deepEqual(await ids('model[]=/v2/device_models/2'), [b.id]);
  t.deepEqual(await ids('model=2&model=1'), [a.id, b.id, c.id]);
  t.deepEqual(await ids('firmware=/v2/firmwares/1'), [c.id]);
  t.deepEqual(await ids('firmware=/v2/firmware/2'), [a.id], 'the v2.26 firmware path');
  t.deepEqual(await ids('firmware[]=3&firmware[]=2'), [a.id, b.id]);
  t.deepEqual(await ids('model=/v2/device_models/1&firmware=/v2/firmwares/3'), []);

  const page1 = await api.call('GET', '/user_devices?limit=2', u);
  t.is(page1.body['hydra:member'].length, 2);
  t.is(page1.body['hydra:view']['hydra:next'], '/v2/user_devices?limit=2&page=2');
  t.deepEqual(await ids('limit=2&page=2'), [c.id]);

  for (const [query, param] of [
    ['model=abc', 'model'],
    ['model=/v2/sports/1', 'model'],
    ['firmware=/v2/device_models/1', 'firmware'],
    ['user=/v2/sports/1', 'user'],
    ['serial=has%20space', 'serial'],
    ['limit=101', 'limit'],
    ['page=0', 'page'],
  ]) {
    const res = await api.call('GET', `/user_devices?${query}`, u);
    t.is(res.status, 422, query);
    t.deepEqual(violations(res.body), [param], query);
  }
  const tooMany = Array.from({ length: 101 }, (_, i) => `serial[]=S${i}`).join('&');
  t.is((await api.call('GET', `/user_devices?${tooMany}`, u)).status, 422, 'at most 100 values per filter');
});

test('PUT changes the fields sent; a new model needs one of its firmwares', async (t) => {
  const u = await api.user();
  const other = await api.user();
  const device = await register(u, { lastConnectedAt: '2025-01-01T00:00:00Z', ownership: 2 });
  await new Promise((r) => setTimeout(r, 1100));
  const path = `/user_devices/${device.id}`;

  const res = await api.call('PUT', path, u, { body: { firmware: '/v2/firmwares/1', lastConnectedAt: null } });
  t.is(res.status, 200);
  t.like(res.body, {
    id: device.id,
    serial: device.serial,
    model: '/v2/device_models/1',
    firmware: '/v2/firmwares/1',
    ownership: 2,
    lastConnectedAt: null,
    createdAt: device.createdAt,
  });
  t.true(res.body.updatedAt > device.updatedAt);

  const alone = await api.call('PUT', path, u, { body: { model: '/v2/device_models/3' } });
  t.is(alone.status, 422);
  t.deepEqual(violations(alone.body), ['firmware']);
  const both = await api.call('PUT', path, u, {
    body: { model: '/v2/device_models/3', firmware: '/v2/firmwares/4', serial: 'NEW-SERIAL', ownership: 0 },
  });
  t.is(both.status, 200);
  t.like(both.body, { model: '/v2/device_models/3', firmware: '/v2/firmwares/4', serial: 'NEW-SERIAL', ownership: 0 });

  // Sending back what was read (read-only members included) changes nothing else.
  const echo = await api.call('PUT', path, u, { body: { ...both.body, user: `/v2/users/${u.ldid}` } });
  t.is(echo.status, 200);
  t.like(echo.body, { serial: 'NEW-SERIAL', model: '/v2/device_models/3' });

  for (const [body, field] of [
    [{ user: `/v2/users/${other.ldid}` }, 'user'],
    [{ serial: 'bad serial' }, 'serial'],
    [{ serial: null }, 'serial'],
    [{ firmware: '/v2/firmwares/2' }, 'firmware'],
    [{ model: '/v2/device_models/404' }, 'model'],
    [{ ownership: -5 }, 'ownership'],
    [{ color: 'red' }, 'color'],
  ] as const) {
    const bad = await api.call('PUT', path, u, { body });
    t.is(bad.status, 422, JSON.stringify(body));
    t.deepEqual(violations(bad.body), [field], JSON.stringify(body));
  }
  const taken = await register(u, { serial: 'TAKEN' });
  const clash = await api.call('PUT', path, u, {
    body: { serial: 'TAKEN', model: '/v2/device_models/1', firmware: '/v2/firmwares/2' },
  });
  t.is(clash.status, 422);
  t.true(clash.body.violations[0].message.includes(taken['@id']));
  t.like((await api.call('GET', path, u)).body, { serial: 'NEW-SERIAL', ownership: 0 }, 'unchanged by refusals');
});

test('DELETE answers 204; the activities of the device stay, without a device', async (t) => {
  const u = await api.user();
  await api.call('GET', '/me', u);
  const device = await register(u);
  const activity = await db
    .insertInto('activities')
    .values({
      user_id: u.ldid,
      sport_id: 121,
      user_device_id: device.id,
      startdate: new Date('2025-05-01T08:00:00Z'),
      duration: 3600,
      manual: false,
      location: sql`null`,
      data_summaries: '{}',
    })
    .returning('id')
    .executeTakeFirstOrThrow();

  const res = await api.call('DELETE', `/user_devices/${device.id}`, u);
  t.is(res.status, 204);
  t.is(res.body, undefined);
  t.is((await api.call('GET', `/user_devices/${device.id}`, u)).status, 404);
  t.is((await api.call('DELETE', `/user_devices/${device.id}`, u)).status, 404, 'gone');
  const kept = await db
    .selectFrom('activities')
    .select(['id', 'user_device_id'])
    .where('id', '=', activity.id)
    .executeTakeFirst();
  t.deepEqual(kept, { id: activity.id, user_device_id: null });
  t.is((await api.call('GET', '/user_devices', u)).body['hydra:totalItems'], 0);
});

test('rules without HTTP: each broken rule names its body field', async (t) => {
  const u = await api.user();
  await api.call('GET', '/me', u);
  const owner = { id: u.ldid };
  const error = await t.throwsAsync(
    createUserDevice(db, owner, { serial: 'ok', modelId: 2, firmwareId: 1, userId: 'someone', ownership: -1 }),
    { instanceOf: DomainError },
  );
  t.is(error?.kind, 'invalid');
  t.deepEqual(error?.errors.map((e) => e.path).sort(), ['body.firmware', 'body.ownership', 'body.user']);
  const created = await createUserDevice(db, owner, { serial: 'RULES-1', modelId: 2, firmwareId: 3 });
  t.is(created.ownership, 0);
  const notMine = await t.throwsAsync(updateUserDevice(db, { id: 'someone-else' }, created.id, { ownership: 1 }), {
    instanceOf: DomainError,
  });
  t.is(notMine?.kind, 'not_found');
});
