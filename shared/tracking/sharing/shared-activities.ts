import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { type Found, type PageRequest, pageOf } from '../../db/paging.ts';
import type { ActivityRow } from '../../db/schema/tracking.ts';
import { notFoundError } from '../../errors.ts';
import { readActivityContent } from '../activities/content-read.ts';
import type { ActivityContent } from '../activities/data.ts';
import { type ActivityFilter, activitiesQuery } from '../activities/list.ts';
import { encodeCursor, type Position } from './cursor.ts';
import { contentForViewer, rowForViewer, type Viewer, visibilitiesSeenBy } from './visibility.ts';

/**
 * Other users' activities as a follower or the public sees them (docs/tracking-sharing-users.md):
 * only those their visibility opens to the viewer, each masked by visibility.ts. The caller
 * decides the viewer from the shares (share-users.ts) before reading here.
 */

/** What a cursor-paged list answers: the page and the cursor of the next one, if any. */
export interface KeysetPage<T> {
  items: T[];
  next: string | undefined;
}

const notFound = (id: string) => notFoundError(`No activity ${id}`);

/**
 * A page of `ownerId`'s activities a follower sees, with the owner's list filters and orders
 * (activities/list.ts); the partial index of migration 0071 serves the default order.
 */
export async function listSharedActivities(
  db: Db,
  ownerId: string,
  filter: ActivityFilter,
  paging: PageRequest,
): Promise<Found<ActivityRow>> {
  // A literal, not a parameter: a plan made without the value could not use the partial index.
  const q = activitiesQuery(db, ownerId, filter).where(sql<boolean>`visibility <> 'private'`);
  const found = await pageOf(q, paging);
  return { ...found, items: found.items.map((row) => rowForViewer(row, 'follower')) };
}

/** One activity of `ownerId` with its streams as `viewer` sees it; 404 when it is not theirs to see. */
export async function findSharedActivity(
  db: Db,
  ownerId: string | undefined,
  viewer: Exclude<Viewer, 'owner'>,
  id: string,
): Promise<{ row: ActivityRow; content: ActivityContent }> {
  // Filtered in the statements: nothing of a hidden activity's streams is read.
  const found = await readActivityContent(db, id, ownerId, visibilitiesSeenBy(viewer));
  if (!found) throw notFound(id);
  return contentForViewer(found, viewer);
}

/** Rows of one more than the page, to tell whether another follows. */
function keysetPage(rows: ActivityRow[], limit: number, viewer: Exclude<Viewer, 'owner'>): KeysetPage<ActivityRow> {
  const items = rows.slice(0, limit).map((row) => rowForViewer(row, viewer));
  const last = items.at(-1);
  return { items, next: rows.length > limit && last ? encodeCursor(last) : undefined };
}

const before = (after: Position | undefined) =>
  after ? sql<boolean>`(startdate, id) < (${after.startdate}::timestamptz, ${after.id}::text)` : sql<boolean>`true`;

/** Everyone's public activities, newest first (the (startdate, id) index of the public ones, backwards). */
export async function listPublicActivities(
  db: Db,
  after: Position | undefined,
  limit: number,
): Promise<KeysetPage<ActivityRow>> {
  const rows = await db
    .selectFrom('activities')
    .selectAll()
    .where(sql<boolean>`visibility = 'public'`)
    .where(before(after))
    .orderBy('startdate', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  return keysetPage(rows, limit, 'public');
}

/**
 * The feed: the latest activities of the users who share with the caller (`ownerIds`), newest
 * first, in one statement of two index-only passes over the partial index of what friends see.
 * First each owner's newest shown start (one entry per owner); the `take`-th newest of those, T,
 * bounds the page: `take` activities start at T or later (one per owner), so the page holds none
 * older. Then only the owners whose newest is at T or later (about `take`) are read, from T on, at
 * most `take` entries each; the merged top is read whole. With fewer owners than `take`, no bound.
 * Cost: one entry per owner plus take × take, whatever the owners' histories.
 */
export async function feedActivities(
  db: Db,
  ownerIds: readonly string[],
  after: Position | undefined,
  limit: number,
): Promise<KeysetPage<ActivityRow>> {
  if (ownerIds.length === 0) return { items: [], next: undefined };
  const take = limit + 1;
  const result = await sql<ActivityRow>`
    with newest as (
      select f.user_id, x.startdate
      from unnest(${ownerIds}::text[]) as f (user_id)
      cross join lateral (
        select a.startdate from activities a
        where a.user_id = f.user_id and a.visibility <> 'private' and ${before(after)}
        order by a.startdate desc, a.id desc
        limit 1
      ) x
    ), bound as (
      select case when count(*) = ${take} then min(startdate) end as t
      from (select startdate from newest order by startdate desc limit ${take}) n
    ), top as (
      select x.id, x.startdate
      from newest n cross join bound b
      cross join lateral (
        select a.id, a.startdate from activities a
        where a.user_id = n.user_id and a.visibility <> 'private' and ${before(after)}
          and (b.t is null or a.startdate >= b.t)
        order by a.startdate desc, a.id desc
        limit ${take}
      ) x
      where b.t is null or n.startdate >= b.t
      order by x.startdate desc, x.id desc
      limit ${take}
    )
    select a.* from top join activities a on a.id = top.id
    order by top.startdate desc, top.id desc`.execute(db);
  return keysetPage(result.rows, limit, 'follower');
}
