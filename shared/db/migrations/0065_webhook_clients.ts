import { type Kysely, sql } from 'kysely';

/**
 * A web hook belongs to its user and to the application (OAuth client) that made it
 * (docs/webhooks.md "Hooks belong to an application"): `client_id`. Once the application loses
 * the user's access, its hooks go in the same transaction, with their pending deliveries
 * (cascades), whichever way the access ended: the user withdraws it (`oauth_consents.revoked_at`),
 * the consent row goes, the client is disabled (`oauth_clients.revoked_at`) or deleted (the
 * foreign key). Triggers, so that no code path can forget it.
 *
 * Hooks made before this migration name no application: they are disabled, with a reason; the
 * first application of the user that changes one (PUT) makes it its own and enables it again.
 * The functions set their `search_path`, so that a restore (pg_restore) runs them as here.
 */
const LEGACY_REASON =
  'Made before web hooks belonged to an application: the application that uses it must change it (PUT) to enable it again, which makes the hook its own.';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table user_web_hooks add column client_id text references oauth_clients (id) on delete cascade`.execute(
    db,
  );
  await sql`create index user_web_hooks_client_idx on user_web_hooks (client_id)`.execute(db);
  await sql`
    update user_web_hooks set disabled_at = coalesce(disabled_at, now()), disabled_reason = ${LEGACY_REASON}
    where client_id is null`.execute(db);

  await sql`
    create function user_web_hooks_drop_for_consent() returns trigger language plpgsql
    set search_path = public, pg_temp as $$
    begin
      delete from user_web_hooks h using tracking_users u
      where u.account_id = old.account_id and h.user_id = u.id and h.client_id = old.client_id;
      return null;
    end $$`.execute(db);
  await sql`
    create trigger oauth_consents_revoked_drop_hooks
      after update of revoked_at on oauth_consents
      for each row when (old.revoked_at is null and new.revoked_at is not null)
      execute function user_web_hooks_drop_for_consent()`.execute(db);
  await sql`
    create trigger oauth_consents_deleted_drop_hooks
      after delete on oauth_consents
      for each row execute function user_web_hooks_drop_for_consent()`.execute(db);

  await sql`
    create function user_web_hooks_drop_for_client() returns trigger language plpgsql
    set search_path = public, pg_temp as $$
    begin
      delete from user_web_hooks where client_id = old.id;
      return null;
    end $$`.execute(db);
  await sql`
    create trigger oauth_clients_revoked_drop_hooks
      after update of revoked_at on oauth_clients
      for each row when (old.revoked_at is null and new.revoked_at is not null)
      execute function user_web_hooks_drop_for_client()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger oauth_clients_revoked_drop_hooks on oauth_clients`.execute(db);
  await sql`drop function user_web_hooks_drop_for_client()`.execute(db);
  await sql`drop trigger oauth_consents_deleted_drop_hooks on oauth_consents`.execute(db);
  await sql`drop trigger oauth_consents_revoked_drop_hooks on oauth_consents`.execute(db);
  await sql`drop function user_web_hooks_drop_for_consent()`.execute(db);
  await sql`alter table user_web_hooks drop column client_id`.execute(db);
}
