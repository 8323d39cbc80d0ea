import test from 'ava';
import { type CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import type { Db } from '../shared/db/database.ts';
import type { Database } from '../shared/db/schema/index.ts';
import { acceptedShareOwner, listShareUsers, sharersOf, viewerOf } from '../shared/tracking/sharing/share-users.ts';
import {
  feedActivities,
  listPublicActivities,
  listSharedActivities,
} from '../shared/tracking/sharing/shared-activities.ts';
import { createTestDatabase } from './helpers/db.ts';

/**
 * The plans of the sharing reads (migration 0071's indexes): each statement as the shared
 * functions send it (captured from Kysely's log, so the test follows the code), explained with its
 * values over enough rows that the planner picks by cost (sequential scans stay allowed): 400 users
 * × 100 activities (30 % private, 20 % public), 20 shares given per user (a fifth pending or
 * refused), so the reader received 20 and accepted 16. Vacuumed, as a live table mostly is, so
 * index-only scans are costed as such.
 */

const database = await createTestDatabase();
test.after.always(() => database.drop());
const { db, pool } = database;

const USERS = 400;
const PER_USER = 100;
const SHARES_PER_USER = 20;

/** The statements `fn` sends, compiled as Kysely sent them. */
async function statementsOf(fn: (db: Db) => Promise<unknown>): Promise<CompiledQuery[]> {
  const sent: CompiledQuery[] = [];
  const logged = new Kysely<Database>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      if (event.level === 'query') sent.push(event.query);
    },
  });
  await fn(logged);
  return sent;
}

async function planOf(q: CompiledQuery): Promise<string> {
  const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`explain ${q.sql}`, q.parameters as unknown[]);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

/** The plan of the one statement `fn` sends (of the one matching `which` when it sends several). */
async function planOfCall(fn: (db: Db) => Promise<unknown>, which = (_: string) => true): Promise<string> {
  const statements = (await statementsOf(fn)).filter((q) => which(q.sql));
  if (statements.length !== 1) throw new Error(`${statements.length} statements matched`);
  return planOf(statements[0] as CompiledQuery);
}

const isCount = (text: string) => /count\(\*\)/.test(text);

/** Loads the rows; answers the users' ids in order. */
async function load(): Promise<string[]> {
  await sql`
    insert into accounts (email, first_name, last_name)
    select format('explain-u%s@example.test', g), 'Explain', format('u%s', g)
    from generate_series(1, ${USERS}::int) g`.execute(db);
  await sql`
    insert into tracking_users (id, account_id)
    select ldid, id from accounts where email like 'explain-u%'`.execute(db);
  const ids = (
    await sql<{ id: string }>`
      select t.id from tracking_users t join accounts a on a.id = t.account_id
      where a.email like 'explain-u%' order by a.number`.execute(db)
  ).rows.map((r) => r.id);
  await sql`
    with u as (select id, ordinality as n from unnest(${ids}::text[]) with ordinality as u (id, ordinality))
    insert into activities (user_id, sport_id, startdate, duration, manual, data_summaries, kept_duplicate,
      visibility, map_visibility)
    select u.id, 121, timestamptz '2023-01-01 00:00:00+00' + (k - 1) * interval '10 days'
        + make_interval(secs => (u.n * 7919 + k * 7) % 700000),
      1800, false, '{}', false, v.visibility, v.visibility
    from u cross join generate_series(1, ${PER_USER}::int) k
    cross join lateral (select case when (u.n * 7 + k * 3) % 10 < 3 then 'private'
      when (u.n * 7 + k * 3) % 10 < 8 then 'followers' else 'public' end as visibility) v
    order by 3`.execute(db);
  await sql`
    with u as (select id, ordinality as n from unnest(${ids}::text[]) with ordinality as u (id, ordinality))
    insert into share_users (user_id, friend_id, status, updated_at)
    select u.id, f.id, case when (u.n + j) % 10 = 0 then 'pending' when (u.n + j) % 10 = 1 then 'refused'
        else 'accepted' end, timestamptz '2024-01-01 00:00:00+00' + make_interval(secs => (u.n * 100 + j)::int)
    from u cross join generate_series(1, ${SHARES_PER_USER}::int) j
    join u f on f.n = (u.n + j * 7 - 1) % ${USERS}::int + 1`.execute(db);
  for (const table of ['accounts', 'tracking_users', 'activities', 'share_users'])
    await sql`vacuum analyze ${sql.table(table)}`.execute(db);
  return ids;
}

/** A user who received shares (20, from the users 7, 14, ... before them) and accepted most. */
let reader = '';
let friends: string[] = [];
let friend = '';
test.before(async () => {
  const users = await load();
  reader = users[200] as string;
  friends = await sharersOf(db, reader);
  friend = friends[0] as string;
});

test('the data: the reader has friends, the tables their rows', async (t) => {
  t.true(friends.length >= 10, `${friends.length} friends`);
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from activities`.execute(db);
  t.is(rows[0]?.n, USERS * PER_USER);
  t.is(await viewerOf(db, reader, friend), 'follower');
});

test('the feed: one index-only range of activities_shared_startdate_idx per friend, the top read by id', async (t) => {
  const first = await feedActivities(db, friends, undefined, 30);
  t.is(first.items.length, 30);
  const after = { startdate: first.items.at(-1)?.startdate as Date, id: first.items.at(-1)?.id as string };
  for (const [name, position] of [
    ['first page', undefined],
    ['a following page', after],
  ] as const) {
    const plan = await planOfCall((d) => feedActivities(d, friends, position, 30));
    const message = `${name}:\n${plan}`;
    t.regex(plan, /Index Only Scan Backward using activities_shared_startdate_idx/, message);
    t.regex(plan, /Index Scan using activities_pkey/, message);
    t.notRegex(plan, /Seq Scan on activities|Bitmap Heap Scan on activities/, message);
    // The friend and, on a following page, the cursor are index conditions, not filters.
    t.regex(plan, /Index Cond: \(user_id = f\.user_id\)|Index Cond: \(\(user_id = f\.user_id\)/, message);
    if (position) t.regex(plan, /Index Cond: .*ROW\(startdate, id\) < ROW\(/, message);
  }
});

test("a friend's list, default order: activities_shared_startdate_idx, backwards; its count index-only", async (t) => {
  const list = (d: Db) => listSharedActivities(d, friend, {}, { page: 1, limit: 30 });
  const page = await planOfCall(list, (s) => !isCount(s));
  t.regex(page, /Index Scan Backward using activities_shared_startdate_idx/, page);
  t.notRegex(page, /Sort|Seq Scan/, page);
  const count = await planOfCall(list, isCount);
  t.regex(count, /Index Only Scan using activities_shared_startdate_idx/, count);
});

test('the public list: activities_public_startdate_idx, backwards, first and following pages', async (t) => {
  const first = await listPublicActivities(db, undefined, 30);
  const after = { startdate: first.items.at(-1)?.startdate as Date, id: first.items.at(-1)?.id as string };
  for (const position of [undefined, after]) {
    const plan = await planOfCall((d) => listPublicActivities(d, position, 30));
    t.regex(plan, /Index Scan Backward using activities_public_startdate_idx/, plan);
    t.notRegex(plan, /Sort|Seq Scan/, plan);
  }
});

test('share_users lists: given on share_users_user_idx, received on share_users_friend_*', async (t) => {
  const paging = { page: 1, limit: 30 };
  const given = (d: Db) => listShareUsers(d, friend, { direction: 'given' }, paging);
  const received = (d: Db) => listShareUsers(d, reader, { direction: 'received' }, paging);
  const receivedAccepted = (d: Db) =>
    listShareUsers(d, reader, { direction: 'received', statuses: ['accepted'], order: 'desc' }, paging);
  for (const [name, fn, index] of [
    ['given', given, /share_users_user_idx/],
    ['received', received, /share_users_friend_(updated_)?idx/],
    ['received, accepted, newest first', receivedAccepted, /share_users_friend_(updated_)?idx/],
  ] as const) {
    for (const [part, which] of [
      ['page', (s: string) => !isCount(s)],
      ['count', isCount],
    ] as const) {
      const plan = await planOfCall(fn, which);
      const message = `${name}, ${part}:\n${plan}`;
      t.regex(plan, new RegExp(`(Index (Only )?Scan( Backward)? using|Bitmap Index Scan on) ${index.source}`), message);
      t.notRegex(plan, /Seq Scan/, message);
    }
  }
});

test('sharersOf is index-only on share_users_friend_idx; viewerOf one probe of a key; a share by id its primary key', async (t) => {
  const sharers = await planOfCall((d) => sharersOf(d, reader));
  t.regex(sharers, /Index Only Scan using share_users_friend_idx/, sharers);
  const viewer = await planOfCall((d) => viewerOf(d, reader, friend));
  // Its three equalities are a key of either index: one probe of one entry.
  t.regex(viewer, /Index (Only )?Scan using share_users_(user_id_friend_id_key|friend_idx)/, viewer);
  const shareId = (
    await db
      .selectFrom('share_users')
      .select('id')
      .where('user_id', '=', friend)
      .where('friend_id', '=', reader)
      .executeTakeFirstOrThrow()
  ).id;
  const owner = await planOfCall((d) => acceptedShareOwner(d, reader, shareId));
  t.regex(owner, /Index Scan using share_users_pkey/, owner);
  for (const plan of [sharers, viewer, owner]) t.notRegex(plan, /Seq Scan/, plan);
});
