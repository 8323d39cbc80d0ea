import test from 'ava';
import { sql } from 'kysely';
import { pageOf, whereDateBounds } from '../shared/db/paging.ts';
import { createTestDatabase } from './helpers/db.ts';

const database = await createTestDatabase();
test.after.always(() => database.drop());
const db = database.db.withTables<{ paging_rows: { id: number; at: Date } }>();

const day = (n: number) => new Date(Date.UTC(2024, 0, n));

test.before(async () => {
  await sql`create table paging_rows (id int primary key, at timestamptz not null)`.execute(db);
  // Ten rows, one a day from 2024-01-01.
  await db
    .insertInto('paging_rows')
    .values(Array.from({ length: 10 }, (_, i) => ({ id: i + 1, at: day(i + 1) })))
    .execute();
});

const rows = () => db.selectFrom('paging_rows').selectAll().orderBy('id');
const ids = (found: { items: { id: number }[] }) => found.items.map((r) => r.id);

test('a full page, the last partial page and a page past the end, each with the total', async (t) => {
  const first = await pageOf(rows(), { page: 1, limit: 4 });
  t.deepEqual(ids(first), [1, 2, 3, 4]);
  t.is(first.total, 10);
  t.deepEqual(first.items[0], { id: 1, at: day(1) }, 'rows keep their selection');
  const last = await pageOf(rows(), { page: 3, limit: 4 });
  t.deepEqual(ids(last), [9, 10]);
  t.is(last.total, 10);
  t.deepEqual(await pageOf(rows(), { page: 4, limit: 4 }), { items: [], total: 10 });
});

test('the query order and filters apply to the page; the total counts the filtered rows', async (t) => {
  const found = await pageOf(db.selectFrom('paging_rows').select('id').where('id', '>', 3).orderBy('id', 'desc'), {
    page: 2,
    limit: 3,
  });
  t.deepEqual(found, { items: [{ id: 7 }, { id: 6 }, { id: 5 }], total: 7 });
  t.deepEqual(await pageOf(rows().where('id', '>', 10), { page: 1, limit: 5 }), { items: [], total: 0 });
});

test('the total is a number, even for a count Postgres types as bigint', async (t) => {
  t.is(typeof (await pageOf(rows(), { page: 1, limit: 1 })).total, 'number');
});

test('date bounds: after and before include the bound, the strictly_ forms exclude it', async (t) => {
  const within = async (bounds: Parameters<typeof whereDateBounds>[2]) =>
    ids(await pageOf(whereDateBounds(rows(), 'at', bounds), { page: 1, limit: 100 }));
  t.deepEqual(await within(undefined), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  t.deepEqual(await within({}), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  t.deepEqual(await within({ after: day(3), before: day(5) }), [3, 4, 5]);
  t.deepEqual(await within({ strictly_after: day(3), strictly_before: day(5) }), [4]);
  t.deepEqual(await within({ after: day(8), strictly_after: day(8) }), [9, 10]);
  t.deepEqual(await within({ before: day(2), strictly_before: day(2) }), [1]);
});
