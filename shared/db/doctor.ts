import { writeFileSync } from 'node:fs';
import { type Kysely, sql } from 'kysely';
import { migrations } from './migrations/index.ts';
import manifestFile from './schema-manifest.json' with { type: 'json' };

/**
 * Whether the live database holds every object the migrations define (docs/operations.md,
 * "Checking the schema"): a restore that skipped a trigger, an index dropped by hand, a function
 * whose search_path makes the next restore fail. The migrations' objects are listed in
 * schema-manifest.json, written from a freshly migrated database (`npm run doctor --
 * --write-manifest`); test/db-doctor.test.ts fails when it no longer matches the migrations.
 */

const MANIFEST = new URL('./schema-manifest.json', import.meta.url);

export interface SchemaManifest {
  /** The last migration the objects are those of. */
  migration: string;
  /** One line per object: `<kind> <name>: <definition>` (sorted). */
  objects: string[];
}

/** Objects of this schema not owned by an extension (PostGIS's table and functions are not ours). */
// biome-ignore lint/suspicious/noExplicitAny: run on any database, before (and regardless of) the typed schema
export async function schemaObjects(db: Kysely<any>): Promise<string[]> {
  const { rows } = await sql<{ line: string }>`
    with ours as (
      select c.oid, c.relname, c.relkind from pg_class c
      where c.relnamespace = current_schema()::regnamespace
        and not exists (select 1 from pg_depend d
          where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')
    )
    select 'table ' || relname as line from ours where relkind in ('r', 'p')
    union all
    select 'view ' || relname from ours where relkind in ('v', 'm')
    union all
    select 'index ' || i.relname || ': ' || pg_get_indexdef(i.oid)
    from ours i where i.relkind in ('i', 'I')
    union all
    select 'constraint ' || t.relname || '.' || k.conname || ': ' || pg_get_constraintdef(k.oid)
    from pg_constraint k join ours t on t.oid = k.conrelid
    union all
    select 'trigger ' || t.relname || '.' || g.tgname || ': ' || pg_get_triggerdef(g.oid)
    from pg_trigger g join ours t on t.oid = g.tgrelid where not g.tgisinternal
    union all
    select 'function ' || p.oid::regprocedure::text || ': ' || coalesce(array_to_string(p.proconfig, ' '), 'no settings')
    from pg_proc p
    where p.pronamespace = current_schema()::regnamespace
      and not exists (select 1 from pg_depend d
        where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
    union all
    select 'extension ' || extname from pg_extension where extname <> 'plpgsql'`.execute(db);
  return rows.map((r) => r.line).sort();
}

export function readManifest(): SchemaManifest {
  return manifestFile as SchemaManifest;
}

/** Writes schema-manifest.json in the sources, for a developer after a new migration. */
export function writeManifest(objects: string[]): SchemaManifest {
  const manifest = { migration: lastMigration(), objects };
  writeFileSync(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

/** The last migration of this build. */
export function lastMigration(): string {
  return Object.keys(migrations).sort().at(-1) ?? '';
}

export interface SchemaReport {
  /** Problems that make the check fail, one line each. */
  problems: string[];
  /** Objects the migrations do not define (an operator's index...): said, not a failure. */
  extra: string[];
}

const key = (line: string) => line.split(': ')[0] as string;

/** Compares the live objects with the manifest, as `npm run doctor` and `npm run migrate` report them. */
export function compareSchema(
  live: string[],
  applied: readonly string[],
  manifest: SchemaManifest = readManifest(),
): SchemaReport {
  const problems: string[] = [];
  const pending = Object.keys(migrations).filter((m) => !applied.includes(m));
  if (pending.length > 0) problems.push(`migrations not applied: ${pending.join(', ')} (run npm run migrate)`);
  const unknown = applied.filter((m) => !Object.hasOwn(migrations, m));
  if (unknown.length > 0)
    problems.push(`migrations this build does not know: ${unknown.join(', ')} (a newer release?)`);
  if (manifest.migration !== lastMigration())
    problems.push(
      `schema-manifest.json is of ${manifest.migration}, not ${lastMigration()}: this build is inconsistent`,
    );
  const liveByKey = new Map(live.map((l) => [key(l), l]));
  const expectedKeys = new Set(manifest.objects.map(key));
  for (const line of manifest.objects) {
    const found = liveByKey.get(key(line));
    if (found === undefined) problems.push(`missing ${line}`);
    else if (found !== line) problems.push(`differs: ${found}\n    expected ${line}`);
  }
  // A function of ours without its own search_path is what made a restore fail once (migration 0067).
  for (const line of live)
    if (line.startsWith('function ') && !line.includes('search_path='))
      problems.push(
        `${key(line)} has no search_path of its own (ALTER FUNCTION ... SET search_path = public, pg_temp)`,
      );
  const extra = live.filter((l) => !expectedKeys.has(key(l)));
  return { problems, extra };
}

/** The migrations the database has applied (none when the migrator never ran). */
// biome-ignore lint/suspicious/noExplicitAny: run on any database, before (and regardless of) the typed schema
export async function appliedMigrations(db: Kysely<any>): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select name from kysely_migration order by name`
    .execute(db)
    .catch(() => ({ rows: [] as { name: string }[] }));
  return rows.map((r) => r.name);
}

// biome-ignore lint/suspicious/noExplicitAny: run on any database, before (and regardless of) the typed schema
export async function checkSchema(db: Kysely<any>): Promise<SchemaReport> {
  return compareSchema(await schemaObjects(db), await appliedMigrations(db));
}
