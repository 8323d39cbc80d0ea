import test from 'ava';
import { DomainError } from '../shared/errors.ts';
import {
  createPartnerAs,
  deletePartnerAs,
  partnerById,
  searchPartners,
  updatePartnerAs,
} from '../shared/partners/partner-service.ts';
import { assertMayModifyPartners, partnerCallerFrom } from '../shared/partners/permissions.ts';
import { MAX_PAGE, parsePartnerSearch } from '../shared/partners/search-query.ts';
import { compilePartnerSearch } from '../shared/partners/search-sql.ts';
import { partnerSlugExists } from '../shared/places/place-service.ts';
import { createTestDatabase } from './helpers/db.ts';
import { createTestAccount } from './helpers/tokens.ts';

const database = await createTestDatabase();
const { db } = database;
const account = await createTestAccount(db, ['staff']);
test.after.always(() => database.drop());
const staff = partnerCallerFrom({ accountId: account.id, roles: ['staff'] });
const user = partnerCallerFrom({ accountId: account.id, roles: ['user', 'partner'] });
const input = (o: Record<string, unknown> = {}) => ({
  user_id: account.number,
  title: 'Club',
  source: 'import',
  link: 'http://example.org',
  lat: 0,
  lng: 0,
  sports_attributes: [{ sport: 121 }],
  ...o,
});
const pathsOf = (e: unknown) => (e as DomainError).errors.map((x) => x.path).sort();

test('permissions: staff only may modify partners', (t) => {
  t.deepEqual(user, { accountId: account.id, staff: false });
  t.notThrows(() => assertMayModifyPartners(staff));
  t.is(t.throws(() => assertMayModifyPartners(user), { instanceOf: DomainError })?.kind, 'forbidden');
});

test('parsePartnerSearch: defaults, both nearby forms, every error named', (t) => {
  t.deepEqual(parsePartnerSearch({}).params, { page: 1 });
  t.deepEqual(
    parsePartnerSearch({ 'nearby[]': '50.6,3.05', sport: '121', featured: 'true', partner: '0', page: '3' }).params,
    {
      nearby: [50.6, 3.05],
      sport: 121,
      featured: true,
      partner: false,
      page: 3,
    },
  );
  t.deepEqual(parsePartnerSearch({ 'nearby[]': ['50.6', '3.05'] }).params?.nearby, [50.6, 3.05]);
  t.deepEqual(parsePartnerSearch({ nearby: '-33.9, 151.2' }).params?.nearby, [-33.9, 151.2]);
  const bad = parsePartnerSearch({
    'nearby[]': '95,3',
    sport: 'tennis',
    featured: 'maybe',
    partner: ['true', 'false'],
    page: String(MAX_PAGE + 1),
  });
  t.is(bad.params, undefined);
  t.deepEqual(bad.errors.map((e) => e.path).sort(), [
    'query.featured',
    'query.nearby[]',
    'query.page',
    'query.partner',
    'query.sport',
  ]);
  for (const v of ['50.6', '50.6,3,1', 'a,b', '', '50,181'])
    t.deepEqual(
      parsePartnerSearch({ 'nearby[]': v }).errors.map((e) => e.path),
      ['query.nearby[]'],
      v,
    );
  t.deepEqual(
    parsePartnerSearch({ page: '0' }).errors.map((e) => e.path),
    ['query.page'],
  );
});

test('compilePartnerSearch: KNN order on the geography with nearby, one statement name per shape', (t) => {
  const near = compilePartnerSearch({ nearby: [50, 3], page: 2 });
  t.regex(near.sql, /order by p\.geog <-> st_setsrid/);
  t.regex(near.sql, /rows with ties/);
  t.deepEqual(near.parameters, [3, 50, 50, 25]);
  t.is(compilePartnerSearch({ nearby: [10, 10], page: 1 }).name, near.name);
  t.not(compilePartnerSearch({ page: 1 }).name, near.name);
});

test.serial('create, read, update, delete through the use cases', async (t) => {
  const p = await createPartnerAs(db, staff, input({ title: 'Use Case Club', country: 'BE', lat: '50.85', lng: 4.35 }));
  t.like(p, { slug: 'use-case-club', lat: '50.85', lng: '4.35', country: 'BE', user_id: Number(account.number) });
  t.true(await partnerSlugExists(db, 'use-case-club'));
  t.deepEqual(await partnerById(db, p.uuid), p);
  const u = await updatePartnerAs(db, staff, 'use-case-club', {
    sport_attributes: [{ sport: 357 }],
    city: 'Bruxelles',
  });
  t.like(u, { city: 'Bruxelles', sports: [{ sport: 357 }], title: 'Use Case Club' });
  await t.throwsAsync(updatePartnerAs(db, user, p.uuid, { title: 'x' }), { message: /staff/ });
  await deletePartnerAs(db, staff, p.uuid);
  t.false(await partnerSlugExists(db, 'use-case-club'));
  const gone = await t.throwsAsync(partnerById(db, p.uuid));
  t.is((gone as DomainError).kind, 'not_found');
});

test('create rules: required fields, sports, country, ranges, link, account', async (t) => {
  const e1 = await t.throwsAsync(createPartnerAs(db, staff, {}));
  t.deepEqual(pathsOf(e1), [
    'body.partner.lat',
    'body.partner.link',
    'body.partner.lng',
    'body.partner.source',
    'body.partner.sports_attributes',
    'body.partner.title',
    'body.partner.user_id',
  ]);
  const e2 = await t.throwsAsync(
    createPartnerAs(
      db,
      staff,
      input({
        country: 'ZZ',
        lat: -90.5,
        lng: 'x',
        link: 'javascript:alert(1)',
        user_id: 99_999_999,
        sports_attributes: [{ sport: 121 }, { sport: 424242 }],
      }),
    ),
  );
  t.deepEqual(pathsOf(e2), [
    'body.partner.country',
    'body.partner.lat',
    'body.partner.link',
    'body.partner.lng',
    'body.partner.sports_attributes[1].sport',
    'body.partner.user_id',
  ]);
  await t.throwsAsync(createPartnerAs(db, user, input()), { message: /staff/ });
});

test.serial('searchPartners: nearest first, filters, 25 per page, ties in creation order', async (t) => {
  for (let i = 0; i < 30; i++)
    await createPartnerAs(
      db,
      staff,
      input({
        title: `Ring ${i}`,
        lat: 10 + i * 0.01,
        lng: 20,
        featured: i % 2 === 0,
        partner: i < 5,
        sports_attributes: [{ sport: i < 3 ? 13 : 121 }],
      }),
    );
  const twin1 = await createPartnerAs(db, staff, input({ title: 'Twin', lat: 9.9, lng: 20 }));
  const twin2 = await createPartnerAs(db, staff, input({ title: 'Twin', lat: 9.9, lng: 20 }));
  const titles = async (q: Record<string, string>) =>
    (JSON.parse(`[${(await searchPartners(database.pool, q)).json}]`) as { title: string; slug: string }[]).map(
      (p) => p.slug,
    );
  const page1 = await titles({ 'nearby[]': '9.9,20' });
  t.is(page1.length, 25);
  t.deepEqual(page1.slice(0, 4), [twin1.slug, twin2.slug, 'ring-0', 'ring-1']);
  const page2 = await titles({ 'nearby[]': '9.9,20', page: '2' });
  t.deepEqual(page2, ['ring-23', 'ring-24', 'ring-25', 'ring-26', 'ring-27', 'ring-28', 'ring-29']);
  t.deepEqual(await titles({ 'nearby[]': '10.3,20', sport: '13' }), ['ring-2', 'ring-1', 'ring-0']);
  t.deepEqual(await titles({ 'nearby[]': '9.9,20', partner: 'true', featured: 'true' }), [
    'ring-0',
    'ring-2',
    'ring-4',
  ]);
  t.deepEqual(await titles({ sport: '13' }), ['ring-0', 'ring-1', 'ring-2']);
  t.deepEqual(await titles({ sport: '99999' }), []);
  const err = await t.throwsAsync(searchPartners(database.pool, { 'nearby[]': 'here' }));
  t.deepEqual(pathsOf(err), ['query.nearby[]']);
});
