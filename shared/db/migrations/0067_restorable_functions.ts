import { type Kysely, sql } from 'kysely';

/**
 * A dump must restore cleanly (docs/operations.md, "Backup and restore"). pg_restore runs with an
 * empty search_path, so:
 * - every function of ours gets its own search_path: it then resolves PostGIS and our tables the
 *   same way whoever calls it (a restore building an index, a session with another path). Found
 *   in pg_proc (functions of this schema not owned by an extension), so none is forgotten.
 * - the `places_copy_to_activities` trigger compared geometries with `is distinct from` in its
 *   WHEN clause, which pg_dump prints without the schema of PostGIS's `=`: the restore could not
 *   find the operator and left the trigger out. It now compares the geometries' binary forms
 *   (a cast, which needs no search_path): at least as strict as `=`, so it fires whenever `=`
 *   said they differ.
 * `npm run doctor` checks both stay true (shared/db/doctor.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    do $$
    declare f regprocedure;
    begin
      for f in
        select p.oid::regprocedure from pg_proc p
        where p.pronamespace = current_schema()::regnamespace
          and not exists (
            select 1 from pg_depend d
            where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
      loop
        execute format('alter function %s set search_path = public, pg_temp', f);
      end loop;
    end $$`.execute(db);
  await sql`drop trigger places_copy_to_activities on places`.execute(db);
  await sql`
    create trigger places_copy_to_activities
      after update of geom, status on places
      for each row when (old.geom::bytea is distinct from new.geom::bytea or old.status is distinct from new.status)
      execute function places_copy_to_activities()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger places_copy_to_activities on places`.execute(db);
  await sql`
    create trigger places_copy_to_activities
      after update of geom, status on places
      for each row when (old.geom is distinct from new.geom or old.status is distinct from new.status)
      execute function places_copy_to_activities()`.execute(db);
  await sql`
    do $$
    declare f regprocedure;
    begin
      for f in
        select p.oid::regprocedure from pg_proc p
        where p.pronamespace = current_schema()::regnamespace
          and not exists (
            select 1 from pg_depend d
            where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
      loop
        execute format('alter function %s reset search_path', f);
      end loop;
    end $$`.execute(db);
}
