import { type Kysely, sql } from 'kysely';

/**
 * User devices (docs/tracking-users-devices.md): one row per physical device of a user, so the
 * same model and serial cannot be registered twice by one user (a client that lost the device's
 * IRI finds it again with `GET /v2/user_devices?model=...&serial=...`). The index also serves
 * those lookups. `/v2/universes` lists each universe's sports: index the reference to the universe.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create unique index user_devices_user_model_serial_key on user_devices (user_id, model_id, serial)`.execute(
    db,
  );
  await sql`create index sports_universe_idx on sports (universe_id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index sports_universe_idx`.execute(db);
  await sql`drop index user_devices_user_model_serial_key`.execute(db);
}
