import { type Selectable, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { type DateBounds, type Found, type PageRequest, pageOf, whereDateBounds } from '../../db/paging.ts';
import type { ShareUsersTable } from '../../db/schema/shares.ts';
import { conflictError, forbiddenError, invalid, notFoundError } from '../../errors.ts';
import { iri } from '../iri.ts';
import { trackingWork } from '../unit-of-work.ts';
import type { Viewer } from './visibility.ts';

/**
 * Shares between users (docs/tracking-sharing-users.md): `user_id` shares their activities with
 * `friend_id`, who accepts or refuses. Either may delete the share; only an accepted one opens
 * anything, and it is read on every request (nothing cached), so a deleted or refused share
 * closes at once.
 */

export type ShareUserRow = Selectable<ShareUsersTable>;
export const SHARE_STATUSES = ['pending', 'accepted', 'refused'] as const;
export type ShareStatus = (typeof SHARE_STATUSES)[number];

/** Shares a user may give, whatever their status (a refused one still holds its place until deleted). */
export const MAX_SHARES_GIVEN = 1000;

/**
 * Shares a user may have accepted at once: the feed reads one range per friend, so its cost
 * grows with them.
 */
export const MAX_SHARES_ACCEPTED = 1000;

/** `given`: the caller shares; `received`: they are shared with. */
export const SHARE_DIRECTIONS = ['given', 'received'] as const;
export type ShareDirection = (typeof SHARE_DIRECTIONS)[number];

export interface ShareFilter {
  direction: ShareDirection;
  statuses?: ShareStatus[] | undefined;
  /** The other side of the share (the friend of a given share, the sharer of a received one). */
  users?: string[] | undefined;
  updatedAt?: DateBounds;
  /** By `updated_at` (the change feed's order), then id; ascending unless said. */
  order?: 'asc' | 'desc';
}

const notFound = (id: string) => notFoundError(`No share ${id}`);

/** A user one may share with: exists and is not being deleted. */
function liveUser(db: Db, id: string) {
  return db
    .selectFrom('tracking_users as u')
    .select('u.id')
    .where('u.id', '=', id)
    .where((eb) =>
      eb.not(eb.exists(eb.selectFrom('account_deletions as d').whereRef('d.account_id', '=', 'u.account_id'))),
    )
    .executeTakeFirst();
}

/**
 * `ownerId` shares their activities with `friendId`: a pending share the friend answers. Sharing
 * with oneself or with no (live) user is a 422 naming `body.user`; a second share with the same
 * user is a 409 naming the first; beyond MAX_SHARES_GIVEN, a 409.
 */
export async function createShareUser(db: Db, ownerId: string, friendId: string): Promise<ShareUserRow> {
  if (friendId === ownerId) throw invalid([{ path: 'body.user', message: 'is you: share with another user' }]);
  if (!(await liveUser(db, friendId)))
    throw invalid([{ path: 'body.user', message: `no user ${iri('users', friendId)}` }]);
  return trackingWork(db, async (uow) => {
    const { trx } = uow;
    // Concurrent creates of one user count one after the other.
    await trx.selectFrom('tracking_users').select('id').where('id', '=', ownerId).forUpdate().executeTakeFirst();
    const given = await trx
      .selectFrom('share_users')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('user_id', '=', ownerId)
      .executeTakeFirstOrThrow();
    const existing = await trx
      .selectFrom('share_users')
      .select('id')
      .where('user_id', '=', ownerId)
      .where('friend_id', '=', friendId)
      .executeTakeFirst();
    if (existing)
      throw conflictError(`You share with this user already: ${iri('share_users', existing.id)}`, [
        { path: 'body.user', message: `shared with already by ${iri('share_users', existing.id)}` },
      ]);
    if (Number(given.n) >= MAX_SHARES_GIVEN)
      throw conflictError(`You share with ${MAX_SHARES_GIVEN} users already: delete a share first`);
    const share = await trx
      .insertInto('share_users')
      .values({ user_id: ownerId, friend_id: friendId })
      .returningAll()
      .executeTakeFirstOrThrow();
    uow.emit({ type: 'ShareRequested', share });
    return share;
  });
}

/** The caller's shares, given or received, ordered by `updated_at` then id. */
export function listShareUsers(
  db: Db,
  callerId: string,
  filter: ShareFilter,
  paging: PageRequest,
): Promise<Found<ShareUserRow>> {
  const [mine, other] =
    filter.direction === 'given' ? (['user_id', 'friend_id'] as const) : (['friend_id', 'user_id'] as const);
  let q = db.selectFrom('share_users').selectAll().where(mine, '=', callerId);
  if (filter.statuses) q = q.where('status', 'in', filter.statuses);
  if (filter.users) q = q.where(other, 'in', filter.users);
  q = whereDateBounds(q, 'updated_at', filter.updatedAt);
  const order = filter.order ?? 'asc';
  return pageOf(q.orderBy('updated_at', order).orderBy('id', order), paging);
}

/** A share the caller gave or received; 404 for anyone else. */
export async function findShareUser(db: Db, callerId: string, id: string): Promise<ShareUserRow> {
  const row = await db
    .selectFrom('share_users')
    .selectAll()
    .where('id', '=', id)
    .where((eb) => eb.or([eb('user_id', '=', callerId), eb('friend_id', '=', callerId)]))
    .executeTakeFirst();
  if (!row) throw notFound(id);
  return row;
}

/**
 * The friend accepts or refuses a share (again: a refused share may be accepted later, an
 * accepted one refused). The sharer cannot answer their own share: 403. A friend accepts at
 * most MAX_SHARES_ACCEPTED shares: 409 beyond.
 */
export async function answerShareUser(
  db: Db,
  callerId: string,
  id: string,
  status: Exclude<ShareStatus, 'pending'>,
): Promise<ShareUserRow> {
  return trackingWork(db, async (uow) => {
    const { trx } = uow;
    const current = await trx
      .selectFrom('share_users')
      .selectAll()
      .where('id', '=', id)
      .where((eb) => eb.or([eb('user_id', '=', callerId), eb('friend_id', '=', callerId)]))
      .forUpdate()
      .executeTakeFirst();
    if (!current) throw notFound(id);
    if (current.friend_id !== callerId) throw forbiddenError('Only the user a share is given to accepts or refuses it');
    if (current.status === status) return current;
    if (status === 'accepted') {
      // Concurrent accepts of one friend count one after the other.
      await trx.selectFrom('tracking_users').select('id').where('id', '=', callerId).forUpdate().executeTakeFirst();
      const followed = await trx
        .selectFrom('share_users')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('friend_id', '=', callerId)
        .where('status', '=', 'accepted')
        .executeTakeFirstOrThrow();
      if (Number(followed.n) >= MAX_SHARES_ACCEPTED)
        throw conflictError(`You follow ${MAX_SHARES_ACCEPTED} users already: delete a share given to you first`);
    }
    const share = await trx
      .updateTable('share_users')
      .set({ status, updated_at: sql<Date>`now()` })
      .where('id', '=', id)
      .where('user_id', '=', current.user_id)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (status === 'accepted') uow.emit({ type: 'ShareAccepted', share });
    return share;
  });
}

/** Either side deletes a share: what it opened closes with the transaction. */
export async function deleteShareUser(db: Db, callerId: string, id: string): Promise<void> {
  await trackingWork(db, async (uow) => {
    const share = await uow.trx
      .deleteFrom('share_users')
      .where('id', '=', id)
      .where((eb) => eb.or([eb('user_id', '=', callerId), eb('friend_id', '=', callerId)]))
      .returningAll()
      .executeTakeFirst();
    if (!share) throw notFound(id);
    uow.emit({ type: 'ShareDeleted', share });
  });
}

/** How `callerId` reads `ownerId`'s activities: as the owner, a follower (accepted share) or the public. */
export async function viewerOf(db: Db, callerId: string, ownerId: string): Promise<Viewer> {
  if (callerId === ownerId) return 'owner';
  const share = await db
    .selectFrom('share_users')
    .select('id')
    .where('user_id', '=', ownerId)
    .where('friend_id', '=', callerId)
    .where('status', '=', 'accepted')
    .executeTakeFirst();
  return share ? 'follower' : 'public';
}

/** The users who share with `callerId` and whose share they accepted (the feed's owners). */
export async function sharersOf(db: Db, callerId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('share_users')
    .select('user_id')
    .where('friend_id', '=', callerId)
    .where('status', '=', 'accepted')
    .execute();
  return rows.map((r) => r.user_id);
}

/** A share the caller received and accepted: whose statistics it opens; 404 otherwise. */
export async function acceptedShareOwner(db: Db, callerId: string, id: string): Promise<string> {
  const row = await db
    .selectFrom('share_users')
    .select('user_id')
    .where('id', '=', id)
    .where('friend_id', '=', callerId)
    .where('status', '=', 'accepted')
    .executeTakeFirst();
  if (!row) throw notFound(id);
  return row.user_id;
}
