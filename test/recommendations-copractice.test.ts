import test from 'ava';
import { sql } from 'kysely';
import { COPRACTICE_MIN_PEOPLE, computeRecommendations } from '../shared/catalogue/recommendations-compute.ts';
import { recommendedSports } from '../shared/catalogue/recommendations-read.ts';
import { createTestDatabase } from './helpers/db.ts';

// Co-practice counts the places and the people (tracking users, one per account) practising both
// sports, people only from COPRACTICE_MIN_PEOPLE on (docs/recommendations.md). Crafted data,
// answers computed by hand below.
const database = await createTestDatabase();
const { db } = database;
const [a, b, c, d] = (
  await db.selectFrom('sports').select('id').where('active', '=', true).orderBy('id').limit(4).execute()
).map((r) => r.id) as [number, number, number, number];
// Declared after the last top-level await: ava starts running once a test or hook is declared.
test.after.always(database.drop);

let n = 0;
async function place(sports: number[], status = 'approved') {
  n += 1;
  const { rows } = await sql<{ id: number }>`
    insert into places (slug, name, geom, country, status)
    values (${`copr-${n}`}, ${`P${n}`}, st_setsrid(st_makepoint(6, 49.7), 4326), 'LU', ${status})
    returning id`.execute(db);
  for (const sport of sports)
    await sql`insert into place_activities (place_id, sport_id) values (${rows[0]?.id}, ${sport})`.execute(db);
}

const activity = (userId: string, sport: number, startdate: Date) =>
  sql`insert into activities (user_id, sport_id, startdate, duration, manual)
      values (${userId}, ${sport}, ${startdate}, 3600, true)`.execute(db);

/** A tracking user (and its account) with one activity per sport given, a day apart. */
async function person(sports: number[]) {
  n += 1;
  const account = await db.insertInto('accounts').defaultValues().returning(['id', 'ldid']).executeTakeFirstOrThrow();
  await db.insertInto('tracking_users').values({ id: account.ldid, account_id: account.id }).execute();
  for (const [i, sport] of sports.entries()) await activity(account.ldid, sport, new Date(Date.UTC(2024, 4, 1 + i, 8)));
  return { accountId: account.id, userId: account.ldid };
}

const rows = () =>
  db
    .selectFrom('sport_copractice')
    .select(['sport_id', 'other_id', 'score', 'places', 'people'])
    .orderBy('sport_id')
    .orderBy('other_id')
    .execute()
    .then((rs) => rs.map((r) => [r.sport_id, r.other_id, r.score, r.places, r.people]));

test.serial('people from tracking activities count beside places, from the floor on', async (t) => {
  t.is(COPRACTICE_MIN_PEOPLE, 3, 'the answers below are computed for a floor of 3');
  await place([a, b]); // P1
  await place([a, c]); // P2
  await place([a, d], 'pending'); // not approved: ignored
  await person([a, b, c, a]); // u1 (a twice: one person still)
  await person([a, b, c]); // u2
  await person([a, c]); // u3
  await person([a, c, d]); // u4
  const u5 = await person([a, d]); // u5, scheduled for deletion: left out
  await db
    .updateTable('tracking_users')
    .set({ schedule_delete: new Date(Date.UTC(2030, 0, 1)) })
    .where('id', '=', u5.userId)
    .execute();
  const u6 = await person([b, d]); // u6, deletion started: left out
  await db.insertInto('account_deletions').values({ account_id: u6.accountId, requested_by: 'operator' }).execute();
  await person([a, d]); // u7
  await person([b, c]); // u8

  const result = await computeRecommendations(db);
  // People per pair: ab u1 u2 = 2 (< 3: 0); ac u1 u2 u3 u4 = 4; ad u4 u7 = 2 (0); bc u1 u2 u8 = 3;
  // bd none (u6 left out); cd u4 = 1 (0). Places: ab P1, ac P2. Pairs scoring 0 get no row.
  t.deepEqual(await rows(), [
    [a, b, 1, 1, 0],
    [a, c, 5, 1, 4],
    [b, a, 1, 1, 0],
    [b, c, 3, 0, 3],
    [c, a, 5, 1, 4],
    [c, b, 3, 0, 3],
  ]);
  t.is(result.counts.copractice, 6);
  // a: c 5 before b 1, against the order of ids: the people decide it.
  t.deepEqual(await recommendedSports(db, String(a), 2), [c, b].map(String));
  // b: c 3 (people only), a 1 (a place only).
  t.deepEqual(await recommendedSports(db, String(b), 2), [c, a].map(String));
  // d: nothing reaches the floor; the fallback by places (a 2, b 1, c 1, ties by id).
  t.deepEqual(await recommendedSports(db, String(d), 3), [a, b, c].map(String));

  // u5 no longer leaving: ad u4 u5 u7 = 3, exactly the floor, counts.
  await db.updateTable('tracking_users').set({ schedule_delete: null }).where('id', '=', u5.userId).execute();
  await computeRecommendations(db);
  t.deepEqual(await recommendedSports(db, String(a), 3), [c, d, b].map(String));
  t.deepEqual(await recommendedSports(db, String(d), 3), [a, b, c].map(String));
  t.deepEqual(
    (await rows()).filter(([s, o]) => s === d || o === d),
    [
      [a, d, 3, 0, 3],
      [d, a, 3, 0, 3],
    ],
  );
});

test.serial('a person is counted once per pair, whatever their number of activities', async (t) => {
  // Ten more activities of b and c for one person who already practises both (u8): bc stays 3.
  const u8 = await db
    .selectFrom('activities')
    .select('user_id')
    .groupBy('user_id')
    .having(sql<number>`count(*) filter (where sport_id not in (${b}, ${c}))`, '=', 0)
    .executeTakeFirstOrThrow();
  for (let i = 0; i < 10; i += 1) await activity(u8.user_id, i % 2 ? b : c, new Date(Date.UTC(2024, 6, 1 + i, 8)));
  await computeRecommendations(db);
  t.deepEqual(
    (await rows()).filter(([s, o]) => s === b && o === c),
    [[b, c, 3, 0, 3]],
  );
});
