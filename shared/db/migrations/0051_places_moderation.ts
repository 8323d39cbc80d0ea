import { type Kysely, sql } from 'kysely';

/**
 * Moderation of places (docs/places.md, "Moderation"):
 * - `place_edits`: what a user (not staff) changed on an approved place, kept beside it until staff
 *   approve (applied) or reject (dropped) it, so the approved version stays public meanwhile. One
 *   row per place and author; a new edit of the same author merges into it.
 * - `places_pending_idx`: the staff queue lists pending places (and places with edits).
 * - `external_place_id` was unique over every place, so a pending place nobody else can see
 *   blocked the id for everyone (squatting) and the 409 disclosed it. It is now unique among
 *   approved places, and per creator among pending ones; approving a duplicate is refused (409).
 *   The old index guarantees both new ones hold on existing rows.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table place_edits (
      place_id bigint not null references places (id) on delete cascade,
      created_by uuid not null references accounts (id) on delete cascade,
      fields jsonb not null default '{}',
      notes jsonb not null default '{}',
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (place_id, created_by)
    )`.execute(db);
  await sql`create index place_edits_created_by_idx on place_edits (created_by)`.execute(db);
  // The staff queue (pending places of everyone) without reading every place.
  await sql`create index places_pending_idx on places (created_at) where status = 'pending'`.execute(db);

  await sql`drop index places_external_idx`.execute(db);
  await sql`
    create unique index places_external_approved_idx on places (external_place_id)
      where status = 'approved' and external_place_id is not null`.execute(db);
  await sql`
    create unique index places_external_pending_idx on places (created_by, external_place_id)
      where status = 'pending' and external_place_id is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index places_pending_idx`.execute(db);
  await sql`drop index places_external_pending_idx`.execute(db);
  await sql`drop index places_external_approved_idx`.execute(db);
  // Fails if two places now share an external id: resolve them before going back.
  await sql`create unique index places_external_idx on places (external_place_id) where external_place_id is not null`.execute(
    db,
  );
  await sql`drop table place_edits`.execute(db);
}
