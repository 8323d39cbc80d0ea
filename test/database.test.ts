import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import test from 'ava';
import { sql } from 'kysely';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { seedReferentials } from '../shared/db/referentials.ts';
import { createTestDatabase } from './helpers/db.ts';

const database = await createTestDatabase();
test.after.always(() => database.drop());
const { db } = database;

test('migrations create PostGIS and are idempotent', async (t) => {
  const { rows } = await sql<{ v: string }>`select postgis_version() as v`.execute(db);
  t.regex(rows[0]?.v ?? '', /^3\./);
  t.deepEqual(await migrateToLatest(db), [], 'nothing left to apply');
});

test('the seeded sports referential has a hierarchy and names in English and French', async (t) => {
  const running = await db.selectFrom('sports').selectAll().where('id', '=', 121).executeTakeFirstOrThrow();
  t.is((running.names as Record<string, string>).en, 'Running');
  t.truthy((running.names as Record<string, string>).fr);
  const children = await db.selectFrom('sports').select('id').where('parent_id', '=', 121).execute();
  t.true(children.length >= 5);
  const mtb = await db.selectFrom('sports').select('id').where('parent_id', '=', 388).execute();
  t.true(mtb.length >= 3);
  const missing = await db
    .selectFrom('sports')
    .select('id')
    .where((eb) => eb.or([sql<boolean>`names->>'en' is null`, sql<boolean>`names->>'fr' is null`]))
    .execute();
  t.deepEqual(missing, []);
});

test('datatypes carry unit, recordWay and cumulable', async (t) => {
  const weight = await db.selectFrom('datatypes').selectAll().where('id', '=', 181).executeTakeFirstOrThrow();
  t.like(weight, { record_way: 0, cumulable: false });
  const distance = await db.selectFrom('datatypes').selectAll().where('id', '=', 5).executeTakeFirstOrThrow();
  t.like(distance, { unit: 'm', record_way: 1, cumulable: true });
});

test('places tags and filters are seeded with their types', async (t) => {
  const tags = await db.selectFrom('place_tags').select('slug').execute();
  t.true(tags.some((r) => r.slug === 'wheelchair_accessible'));
  const difficulty = await db
    .selectFrom('place_filters')
    .selectAll()
    .where('slug', '=', 'difficulty')
    .executeTakeFirstOrThrow();
  t.is(difficulty.type, 'level');
  const season = await db
    .selectFrom('place_filters')
    .selectAll()
    .where('slug', '=', 'season')
    .executeTakeFirstOrThrow();
  t.deepEqual(season.values, ['Fall', 'Spring', 'Summer', 'Winter']);
});

test('seeding again changes nothing', async (t) => {
  const count = async () =>
    Number(
      (
        await db
          .selectFrom('sports')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const before = await count();
  await seedReferentials(db);
  t.is(await count(), before);
});

test('a CLI started with a bad variable prints which one and exits 2', async (t) => {
  const run = promisify(execFile);
  const error = await t.throwsAsync(() =>
    run(process.execPath, ['scripts/migrate.ts'], { env: { ...process.env, DATABASE_POOL_MAX: 'many' } }),
  );
  const failure = error as unknown as { code: number; stderr: string };
  t.is(failure.code, 2);
  t.regex(failure.stderr, /DATABASE_POOL_MAX/);
});

test('a connection lost while its client is checked out between statements does not crash the process', async (t) => {
  // What a PostgreSQL outage does to a request or job that holds a client (a transaction between
  // two statements): the client emits 'error', which nothing else listens to while it is out.
  const { db, pool } = createDb(database.url, 1);
  t.teardown(() => db.destroy());
  const client = await pool.connect();
  const pid = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid;
  const ended = new Promise((resolve) => client.once('end', resolve));
  await database.pool.query('select pg_terminate_backend($1)', [pid]);
  await ended;
  await t.throwsAsync(client.query('select 1'));
  client.release();
  // The pool drops the dead client and serves with a new connection.
  t.is((await sql<{ one: number }>`select 1 as one`.execute(db)).rows[0]?.one, 1);
});
