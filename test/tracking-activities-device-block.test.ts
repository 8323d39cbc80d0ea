import test from 'ava';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, activityCalls, type Body, violations } from './helpers/tracking-activities.ts';

const api = await startTrackingApi();
test.after.always(() => api.close());
const { db } = api.database;
const { post, deviceOf } = activityCalls(api);

let serials = 0;
/** A serial no other test uses. */
const newSerial = () => `BLOCK-${process.pid}-${++serials}`;
let starts = 0;
/** A start no other activity of the file has, so no create is a duplicate of another. */
const newStart = () => new Date(Date.UTC(2024, 0, 1) + ++starts * 3_600_000).toISOString();

/** An activity of `u` recorded by the device the block names, through the bluetooth connector. */
const recorded = (u: TrackingTestUser, device: Body | null, fields: Body = {}) =>
  activity(u, {
    startdate: newStart(),
    connector: '/v2/connectors/4',
    location: {
      elapsed_time: 0,
      latitude: 50.63,
      longitude: 3.06,
      elevation: 20,
      device,
      ...(fields.location as Body),
    },
    ...Object.fromEntries(Object.entries(fields).filter(([k]) => k !== 'location')),
  });

const devicesOf = (u: TrackingTestUser) =>
  db
    .selectFrom('user_devices')
    .select(['id', 'serial', 'model_id', 'firmware_id'])
    .where('user_id', '=', u.ldid)
    .orderBy('created_at')
    .execute();

test('a block naming a device the caller does not have registers it for them; the activity is stored against it and GET shows it', async (t) => {
  const u = await api.user();
  const sn = newSerial();
  const block = { firmware: '/v2/firmwares/2', model: '/v2/device_models/1', sn };
  const res = await post(u, recorded(u, block));
  t.is(res.status, 201, JSON.stringify(res.body));
  const devices = await devicesOf(u);
  t.is(devices.length, 1);
  t.like(devices[0], { serial: sn, model_id: 1, firmware_id: 2 });
  const iri = `/v2/user_devices/${devices[0]?.id}`;
  t.like(res.body, { userDevice: iri, manual: false, connector: '/v2/connectors/4' });

  const got = await api.call('GET', `/activities/${res.body.id}`, u);
  t.like(got.body, { userDevice: iri, manual: false, connector: '/v2/connectors/4' });
  const device = await api.call('GET', iri.slice(3), u);
  t.is(device.status, 200);
  t.like(device.body, {
    serial: sn,
    model: '/v2/device_models/1',
    firmware: '/v2/firmwares/2',
    user: `/v2/users/${u.ldid}`,
  });
  // The location object is still stored as sent.
  const row = await db
    .selectFrom('activities')
    .select('location')
    .where('id', '=', res.body.id)
    .executeTakeFirstOrThrow();
  t.deepEqual(row.location, { elapsed_time: 0, latitude: 50.63, longitude: 3.06, elevation: 20, device: block });
});

test('a block naming a device the caller has finds it (ids, digits, absolute and /v2/firmware IRIs alike); its firmware stays', async (t) => {
  const u = await api.user();
  const sn = newSerial();
  const registered = await api.call('POST', '/user_devices', u, {
    body: { serial: sn, model: '/v2/device_models/1', firmware: '/v2/firmwares/2' },
  });
  t.is(registered.status, 201, JSON.stringify(registered.body));
  const blocks = [
    { firmware: 1, model: 1, sn },
    { firmware: '1', model: '1', sn },
    { firmware: '/v2/firmware/1', model: `${api.config.PUBLIC_URL}/v2/device_models/1`, sn },
    { model: '/v2/device_models/1', sn },
  ];
  for (const block of blocks) {
    const res = await post(u, recorded(u, block));
    t.is(res.status, 201, `${JSON.stringify(block)}: ${JSON.stringify(res.body)}`);
    t.is(res.body.userDevice, registered.body['@id'], JSON.stringify(block));
  }
  t.deepEqual(
    (await devicesOf(u)).map((d) => [d.id, d.firmware_id]),
    [[registered.body.id, 2]],
  );
  // The same serial on another model is another device.
  const other = await post(u, recorded(u, { firmware: 3, model: 2, sn }));
  t.is(other.status, 201, JSON.stringify(other.body));
  t.not(other.body.userDevice, registered.body['@id']);
  t.is((await devicesOf(u)).length, 2);
});

test("another user's device with the same serial is never taken: the caller gets a device of their own", async (t) => {
  const owner = await api.user();
  const caller = await api.user();
  const block = { firmware: 2, model: 1, sn: newSerial() };
  const first = await post(owner, recorded(owner, block));
  t.is(first.status, 201, JSON.stringify(first.body));
  const second = await post(caller, recorded(caller, block));
  t.is(second.status, 201, JSON.stringify(second.body));
  const [mine] = await devicesOf(caller);
  const [theirs] = await devicesOf(owner);
  t.is(second.body.userDevice, `/v2/user_devices/${mine?.id}`);
  t.is(first.body.userDevice, `/v2/user_devices/${theirs?.id}`);
  t.not(mine?.id, theirs?.id);
  t.is((await devicesOf(owner)).length, 1);
});

test('a bad block is a 422 naming its member; nothing is stored and no device registered', async (t) => {
  const u = await api.user();
  const sn = newSerial();
  const cases: [Body, Body, string[]][] = [
    [{ firmware: 2, model: 999, sn }, {}, ['location.device.model']],
    [{ firmware: 999, model: 1, sn }, {}, ['location.device.firmware']],
    [{ firmware: 3, model: 1, sn }, {}, ['location.device.firmware']],
    [
      { firmware: '/v2/sports/2', model: '/v2/firmwares/1', sn },
      {},
      ['location.device.firmware', 'location.device.model'],
    ],
    [{ firmware: 2, model: 1.5, sn }, {}, ['location.device.model']],
    [{ firmware: 2, model: 0, sn }, {}, ['location.device.model']],
    [{ firmware: 'v2.0.0', model: 1, sn }, {}, ['location.device.firmware']],
    [{ firmware: 2, sn }, {}, ['location.device.model']],
    [{ firmware: 2, model: 1 }, {}, ['location.device.sn']],
    [{ firmware: 2, model: 1, sn: 'no spaces' }, {}, ['location.device.sn']],
    [{ firmware: 2, model: 1, sn: 'x'.repeat(129) }, {}, ['location.device.sn']],
    [{ model: 1, sn }, {}, ['location.device.firmware']],
    [{ firmware: 2, model: 1, sn, colour: 'red' }, {}, ['location.device']],
    [{ firmware: 2, model: 1, sn }, { connector: null }, ['connector']],
    [{ firmware: 2, model: 1, sn }, { manual: true }, ['manual']],
    [{ firmware: 2, model: 1, sn }, { location: { manual: true } }, ['location.manual']],
  ];
  for (const [block, fields, paths] of cases) {
    const res = await post(u, recorded(u, block, fields));
    t.is(res.status, 422, `${JSON.stringify([block, fields])}: ${JSON.stringify(res.body)}`);
    t.is(res.body['@type'], 'ConstraintViolationList');
    t.deepEqual(violations(res.body).sort(), paths, JSON.stringify([block, fields]));
  }
  t.deepEqual(await devicesOf(u), []);
  t.is(await db.selectFrom('activities').select('id').where('user_id', '=', u.ldid).executeTakeFirst(), undefined);
});

test('with userDevice too, the block must name that device: nothing is registered for it', async (t) => {
  const u = await api.user();
  const mine = await deviceOf(u);
  const row = await db.selectFrom('user_devices').selectAll().where('id', '=', mine).executeTakeFirstOrThrow();
  const same = await post(
    u,
    recorded(
      u,
      { model: row.model_id, firmware: row.firmware_id, sn: row.serial },
      { userDevice: `/v2/user_devices/${mine}` },
    ),
  );
  t.is(same.status, 201, JSON.stringify(same.body));
  t.is(same.body.userDevice, `/v2/user_devices/${mine}`);
  const other = await post(
    u,
    recorded(u, { model: 1, firmware: 2, sn: newSerial() }, { userDevice: `/v2/user_devices/${mine}` }),
  );
  t.is(other.status, 422, JSON.stringify(other.body));
  t.deepEqual(violations(other.body), ['location.device']);
  t.is((await devicesOf(u)).length, 1);
});

test('a block with every member null (or none) names no device: the activity is manual, as without a block', async (t) => {
  const u = await api.user();
  for (const device of [{ firmware: null, model: null, sn: null }, {}, null]) {
    const res = await post(u, activity(u, { startdate: newStart(), location: { device } }));
    t.is(res.status, 201, JSON.stringify(res.body));
    t.like(res.body, { userDevice: null, manual: true, connector: null });
  }
  t.deepEqual(await devicesOf(u), []);
});

test('creates reporting the same new device at once register it once', async (t) => {
  const u = await api.user();
  const block = { firmware: 2, model: 1, sn: newSerial() };
  const answers = await Promise.all(Array.from({ length: 6 }, () => post(u, recorded(u, block))));
  t.deepEqual(
    answers.map((r) => r.status),
    Array(6).fill(201),
    JSON.stringify(answers.map((r) => r.body)),
  );
  const devices = await devicesOf(u);
  t.is(devices.length, 1);
  t.true(answers.every((r) => r.body.userDevice === `/v2/user_devices/${devices[0]?.id}`));
});
