import test, { type ExecutionContext } from 'ava';
import type { Role } from '../shared/db/schema/accounts.ts';
import { DomainError, type DomainErrorKind } from '../shared/errors.ts';
import {
  addActivityAs,
  addActivityTag,
  deleteActivityAs,
  upsertActivitiesAs,
} from '../shared/places/activity-service.ts';
import {
  assertMayDeleteActivity,
  assertMayUpdatePlace,
  type Caller,
  callerFrom,
} from '../shared/places/permissions.ts';
import {
  createPlaceAs,
  deletePlaceAs,
  moderatePlace,
  placeFeature,
  updatePlaceAs,
  visiblePlace,
} from '../shared/places/place-service.ts';
import { createTestDatabase } from './helpers/db.ts';
import { createTestAccount } from './helpers/tokens.ts';

// The places use cases called directly on a real database, without HTTP: the rules live here.
const database = await createTestDatabase();
const { db } = database;
test.after.always(() => database.drop());
const config = { PUBLIC_URL: 'http://api.test' };

async function caller(roles: Role[] = ['user']): Promise<Caller> {
  const account = await createTestAccount(db, roles);
  return callerFrom({ accountId: account.id, roles });
}

const point = (name = `Court ${Math.random().toString(36).slice(2, 8)}`) => ({
  geometry: { type: 'Point', coordinates: [3.0573, 50.6292] },
  name,
  country: 'FR',
  activities: [{ sport_id: 357, tags: ['floodlight'], surface: 'clay' }],
});

async function fails(t: ExecutionContext, promise: Promise<unknown>, kind: DomainErrorKind): Promise<DomainError> {
  const error = await t.throwsAsync(promise, { instanceOf: DomainError });
  t.is(error?.kind, kind, error?.message);
  return error as DomainError;
}

test('callerFrom reads the staff and partner roles', (t) => {
  t.deepEqual(callerFrom({ accountId: 'a', roles: ['user'] }), { accountId: 'a', staff: false, partner: false });
  t.deepEqual(callerFrom({ accountId: 'a', roles: ['staff', 'partner'] }), {
    accountId: 'a',
    staff: true,
    partner: true,
  });
});

test('permission rules: partner fields need a partner, other fields the creator or staff', (t) => {
  const owner: Caller = { accountId: 'o', staff: false, partner: false };
  const staff: Caller = { accountId: 's', staff: true, partner: false };
  const partner: Caller = { accountId: 'p', staff: false, partner: true };
  t.notThrows(() => assertMayUpdatePlace(owner, 'o', ['name', 'notes']));
  t.notThrows(() => assertMayUpdatePlace(staff, 'o', ['name']));
  t.notThrows(() => assertMayUpdatePlace(partner, 'o', ['featured', 'partner']));
  for (const [who, fields] of [
    [owner, ['featured']],
    [staff, ['partner']],
    [partner, ['featured', 'name']],
  ] as const)
    t.is(t.throws(() => assertMayUpdatePlace(who, 'o', fields), { instanceOf: DomainError })?.kind, 'forbidden');
  const activity = { created_by: 'a', place_created_by: 'p' };
  t.notThrows(() => assertMayDeleteActivity({ accountId: 'a', staff: false, partner: false }, activity));
  t.notThrows(() => assertMayDeleteActivity({ accountId: 'p', staff: false, partner: false }, activity));
  t.notThrows(() => assertMayDeleteActivity(staff, activity));
  t.throws(() => assertMayDeleteActivity(owner, activity), { instanceOf: DomainError });
});

test('a user creates a pending place that only they and staff see; staff approve it', async (t) => {
  const user = await caller();
  const staff = await caller(['staff']);
  const stranger = await caller();
  const { uuid, created } = await createPlaceAs(db, user, point(), undefined);
  t.true(created);
  t.is((await visiblePlace(db, uuid, user)).status, 'pending');
  await fails(t, visiblePlace(db, uuid, stranger), 'not_found');
  await fails(t, visiblePlace(db, uuid, undefined), 'not_found');
  await fails(t, moderatePlace(db, user, uuid, 'approved'), 'forbidden');
  await moderatePlace(db, staff, uuid, 'approved');
  t.is((await visiblePlace(db, uuid, undefined)).status, 'approved');
});

test('creation rules: every problem named at once; a taken external id is a conflict', async (t) => {
  const staff = await caller(['staff']);
  const bad = await fails(
    t,
    createPlaceAs(
      db,
      staff,
      { ...point(), name: undefined, country: 'XX', geometry: { type: 'Point', coordinates: [200, 95] } },
      undefined,
    ),
    'invalid',
  );
  t.deepEqual(bad.errors.map((e) => e.path).sort(), ['body.country', 'body.geometry.coordinates', 'body.name']);
  const sports = await fails(
    t,
    createPlaceAs(db, staff, { ...point(), activities: [{ sport_id: 357 }, { sport_id: '357' }] }, undefined),
    'invalid',
  );
  t.deepEqual(sports.errors, [
    { path: 'body.activities[1].sport_id', message: 'sport 357 is listed twice: one activity per sport' },
  ]);
  await createPlaceAs(db, staff, { ...point(), external_place_id: 'ext-1' }, undefined);
  const taken = await fails(
    t,
    createPlaceAs(db, staff, { ...point(), external_place_id: 'ext-1' }, undefined),
    'conflict',
  );
  t.is(taken.errors[0]?.path, 'body.external_place_id');
  const again = await createPlaceAs(
    db,
    staff,
    { external_place_id: 'ext-1', activities: [{ sport_id: 121 }] },
    undefined,
  );
  t.false(again.created);
  const feature = await placeFeature(db, config, again.uuid, staff, 'en');
  t.deepEqual(
    (feature.properties.activities as { sport_id: number }[]).map((a) => a.sport_id),
    [121, 357],
  );
});

test('notes need a locale the service keeps', async (t) => {
  const user = await caller();
  const error = await fails(t, createPlaceAs(db, user, { ...point(), notes: 'x' }, 'xx-YY'), 'invalid');
  t.is(error.errors[0]?.path, 'headers.accept-language');
  const { uuid } = await createPlaceAs(db, user, { ...point(), notes: 'Bonjour' }, 'fr-FR');
  t.is((await placeFeature(db, config, uuid, user, 'fr-FR')).properties.notes, 'Bonjour');
});

test('update and delete: creator yes, others forbidden where they see the place, not found where they do not', async (t) => {
  const owner = await caller();
  const other = await caller();
  const staff = await caller(['staff']);
  const { uuid } = await createPlaceAs(db, owner, point(), undefined);
  await fails(t, updatePlaceAs(db, other, uuid, { name: 'Mine now' }, undefined), 'not_found');
  await fails(t, deletePlaceAs(db, other, uuid), 'not_found');
  await moderatePlace(db, staff, uuid, 'approved');
  await fails(t, updatePlaceAs(db, other, uuid, { name: 'Mine now' }, undefined), 'forbidden');
  await fails(t, deletePlaceAs(db, other, uuid), 'forbidden');
  await fails(t, deletePlaceAs(db, staff, uuid), 'forbidden');
  await fails(t, updatePlaceAs(db, owner, uuid, {}, undefined), 'invalid');
  await fails(t, updatePlaceAs(db, owner, uuid, { featured: true }, undefined), 'forbidden');
  await updatePlaceAs(db, owner, uuid, { name: 'Renamed' }, undefined);
  t.not((await visiblePlace(db, uuid, undefined)).name, 'Renamed', 'an approved place changes once staff approve');
  const [edit] = (await placeFeature(db, config, uuid, staff, 'en')).properties.pending_edits as { revision: string }[];
  await moderatePlace(db, staff, uuid, 'approved', edit?.revision);
  t.is((await visiblePlace(db, uuid, undefined)).name, 'Renamed');
  await deletePlaceAs(db, owner, uuid);
  await fails(t, visiblePlace(db, uuid, owner), 'not_found');
});

test('activities: one per sport, validated together, deleted by their creator, the place creator or staff', async (t) => {
  const owner = await caller();
  const helper = await caller();
  const other = await caller();
  const staff = await caller(['staff']);
  const { uuid } = await createPlaceAs(db, staff, point(), undefined);
  await fails(t, addActivityAs(db, config, helper, uuid, { sport_id: 357 }), 'conflict');
  const added = await addActivityAs(db, config, helper, uuid, { sport_id: 121, tags: [] });
  t.is(added.sport_id, 121);
  await fails(t, addActivityTag(db, helper, uuid, 121, 'no-such-tag'), 'invalid');
  const listed = await fails(
    t,
    upsertActivitiesAs(db, config, owner, uuid, [{ sport_id: 357, surface: 'lava' }, { sport_id: 999999 }]),
    'invalid',
  );
  t.deepEqual(
    listed.errors.map((e) => e.path),
    ['body.activities[0].surface', 'body.activities[1].sport_id'],
  );
  await fails(t, deleteActivityAs(db, other, uuid, 121), 'forbidden');
  await deleteActivityAs(db, helper, uuid, 121);
  await fails(t, deleteActivityAs(db, helper, uuid, 121), 'not_found');
  await deleteActivityAs(db, staff, uuid, 357);
});
