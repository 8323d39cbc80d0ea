import test from 'ava';
import { copyBinaryRows, literal, parseCopyBinary } from '../shared/db/copy-binary.ts';
import { poolOf } from '../shared/db/database.ts';
import { createTestDatabase } from './helpers/db.ts';

const database = await createTestDatabase();
test.after.always(() => database.drop());
const { db, pool } = database;

const bytes = (...b: number[]) => Buffer.from(b);

test('copyBinaryRows: every field as its binary bytes, NULL as null, empty values kept', async (t) => {
  const rows = await copyBinaryRows(
    pool,
    `select * from (values
       (1, '\\x00ff10'::bytea, array_send('{1,-2}'::int4[])),
       (2, ''::bytea, null),
       (3, null, null)) v(tag, b, a)`,
  );
  t.is(rows.length, 3);
  t.deepEqual(rows[0], [bytes(0, 0, 0, 1), bytes(0x00, 0xff, 0x10), rows[0]?.[2] as Buffer]);
  // array_send: 1 dimension, no NULLs, int4 (23), 2 elements from 1, then (length 4, value) pairs.
  t.deepEqual(
    rows[0]?.[2],
    bytes(
      0,
      0,
      0,
      1,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      23,
      0,
      0,
      0,
      2,
      0,
      0,
      0,
      1,
      0,
      0,
      0,
      4,
      0,
      0,
      0,
      1,
      0,
      0,
      0,
      4,
      255,
      255,
      255,
      254,
    ),
  );
  t.deepEqual(rows[1], [bytes(0, 0, 0, 2), Buffer.alloc(0), null]);
  t.deepEqual(rows[2], [bytes(0, 0, 0, 3), null, null]);
  t.deepEqual(await copyBinaryRows(pool, 'select 1 where false'), []);
});

test('copyBinaryRows: a value of several MB arrives whole, across many socket reads', async (t) => {
  const [row] = await copyBinaryRows(pool, `select decode(repeat('0123456789abcdef', 400000), 'hex')`);
  const value = row?.[0] as Buffer;
  t.is(value.length, 3_200_000);
  t.deepEqual(value.subarray(0, 8), bytes(0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef));
  t.deepEqual(value.subarray(-8), bytes(0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef));
});

test('copyBinaryRows: an SQL error rejects, and the pool goes on serving', async (t) => {
  await t.throwsAsync(copyBinaryRows(pool, 'select no_such_column from activities'), { message: /no_such_column/ });
  await t.throwsAsync(copyBinaryRows(pool, 'select 1/0'), { message: /division by zero/ });
  const rows = await copyBinaryRows(pool, 'select 7');
  t.deepEqual(rows, [[bytes(0, 0, 0, 7)]]);
  t.is((await pool.query('select 1 as one')).rows[0]?.one, 1);
});

test('literal: quotes and backslashes cannot leave the literal', async (t) => {
  for (const value of ["it's", 'back\\slash', "'; drop table activities; --", "\\'"]) {
    const [row] = await copyBinaryRows(pool, `select ${literal(value)}::text`);
    t.is(row?.[0]?.toString('utf8'), value);
  }
});

test('parseCopyBinary refuses what is not a whole binary COPY output', (t) => {
  t.throws(() => parseCopyBinary(Buffer.from('not a copy')), { message: /no signature/ });
  const header = Buffer.from([
    0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0,
  ]);
  t.deepEqual(parseCopyBinary(Buffer.concat([header, bytes(0xff, 0xff)])), []);
  t.throws(() => parseCopyBinary(header), { message: /no end marker/ });
  // One tuple of one field announcing 10 bytes, with 2 present.
  const truncated = Buffer.concat([header, bytes(0, 1, 0, 0, 0, 10, 1, 2)]);
  t.throws(() => parseCopyBinary(truncated), { message: /truncated field/ });
  t.throws(() => parseCopyBinary(Buffer.concat([header, bytes(0, 2, 0, 0, 0, 0)])), { message: /truncated tuple/ });
});

test('poolOf: the pool of a Db made by createDb; a transaction is refused', async (t) => {
  t.is(poolOf(db), pool);
  await db.transaction().execute(async (trx) => {
    t.throws(() => poolOf(trx), { message: /not made by createDb/ });
  });
});
