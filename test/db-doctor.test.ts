import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { sql } from 'kysely';
import { checkSchema } from '../shared/db/doctor.ts';
import { runScript } from './helpers/cli.ts';
import { createTestDatabase } from './helpers/db.ts';
import { dump, emptyDatabase, restore } from './helpers/pg-backup.ts';

/**
 * The schema check (npm run doctor, and npm run migrate after migrating) and the restore of a
 * dump: a freshly migrated database is exactly what shared/db/schema-manifest.json lists, a dump
 * restores without an error, and a missing trigger, function or index is said, exit 1.
 */
const fresh = await createTestDatabase();
const broken = await createTestDatabase();
const dir = await mkdtemp(path.join(tmpdir(), 'sb-doctor-'));
test.after.always(async () => {
  await fresh.drop();
  await broken.drop();
  await rm(dir, { recursive: true, force: true });
});

test.serial('a freshly migrated database is what the manifest lists, no more, no less', async (t) => {
  const report = await checkSchema(fresh.db);
  const hint = 'after a new migration: npm run doctor -- --write-manifest on a freshly migrated database';
  t.deepEqual(report.problems, [], hint);
  t.deepEqual(report.extra, [], hint);
});

test.serial(
  'pg_dump -Fc, then pg_restore into a new database: no error, and the restored schema is complete',
  async (t) => {
    const file = path.join(dir, 'fresh.dump');
    const dumped = await dump(fresh.url, file);
    t.is(dumped.code, 0, dumped.stderr);
    const target = await emptyDatabase();
    t.teardown(() => target.drop());
    const restored = await restore(target.url, file);
    t.is(restored.code, 0, restored.stderr);
    const doctor = await runScript('scripts/doctor.ts', [], { DATABASE_URL: target.url });
    t.is(doctor.code, 0, doctor.stderr);
    t.regex(doctor.stdout, /schema complete/);
  },
);

test.serial('a missing trigger, function or index is said by npm run doctor and npm run migrate, exit 1', async (t) => {
  await sql`drop trigger places_copy_to_activities on places`.execute(broken.db);
  await sql`drop function oauth_clients_name_immutable() cascade`.execute(broken.db);
  await sql`drop index outbox_open_idx`.execute(broken.db);
  const doctor = await runScript('scripts/doctor.ts', [], { DATABASE_URL: broken.url });
  t.is(doctor.code, 1);
  t.regex(doctor.stderr, /missing trigger places\.places_copy_to_activities/);
  t.regex(doctor.stderr, /missing function oauth_clients_name_immutable\(\)/);
  // The function's trigger went with it (cascade): said too.
  t.regex(doctor.stderr, /missing trigger oauth_clients\.oauth_clients_name_immutable/);
  t.regex(doctor.stderr, /missing index outbox_open_idx/);
  const migrate = await runScript('scripts/migrate.ts', [], { DATABASE_URL: broken.url });
  t.is(migrate.code, 1, migrate.stdout);
  t.notRegex(migrate.stdout, /schema up to date/);
  t.regex(migrate.stderr, /missing trigger places\.places_copy_to_activities/);
  t.regex(migrate.stderr, /schema incomplete: 4 problem/);
});

test.serial('a function of ours without its own search_path is a problem', async (t) => {
  const db = fresh.db;
  await sql`create function doctor_probe() returns int language sql as 'select 1'`.execute(db);
  t.teardown(() => sql`drop function doctor_probe()`.execute(db));
  const { problems } = await checkSchema(db);
  t.true(problems.some((p) => /function doctor_probe\(\) has no search_path/.test(p)));
});
