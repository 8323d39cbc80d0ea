import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { PlaceStatus } from '../db/schema/places.ts';
import { conflictError, type DomainError } from '../errors.ts';
import type { Viewer } from './activities.ts';

/**
 * `external_place_id` (docs/places.md, "external_place_id"): unique among approved places, and per
 * creator among pending ones (migration 0051). A pending place is seen only by its creator and
 * staff, so it neither blocks anyone else's use of the id (squatting) nor shows up in anyone
 * else's conflict (an oracle on hidden places). Duplicates meet at approval, where staff see both.
 */

/** The unique indexes behind those rules: a violation of one is the conflict below, raced. */
export const EXTERNAL_ID_INDEXES = ['places_external_approved_idx', 'places_external_pending_idx'];

/**
 * The place a caller may be told holds `externalId`: the approved one, else the caller's own
 * pending one (`approvedOnly`: only the approved one). What variant A adds to, and what a new
 * place with that id conflicts with.
 */
export async function externalIdHolder(
  db: Db,
  externalId: string,
  caller: Viewer,
  options: { approvedOnly?: boolean } = {},
): Promise<{ id: number; uuid: string; status: PlaceStatus } | undefined> {
  return db
    .selectFrom('places as p')
    .select(['p.id', 'p.uuid', 'p.status'])
    .where('p.external_place_id', '=', externalId)
    .where((eb) =>
      options.approvedOnly
        ? eb('p.status', '=', 'approved')
        : eb.or([
            eb('p.status', '=', 'approved'),
            eb.and([eb('p.status', '=', 'pending'), eb('p.created_by', '=', caller.accountId)]),
          ]),
    )
    .orderBy(sql`p.status = 'approved'`, 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** The approved place other than `placeId` holding `externalId` (approving `placeId` would duplicate it). */
export async function approvedHolder(
  db: Db,
  externalId: string,
  placeId: number,
): Promise<{ uuid: string } | undefined> {
  return db
    .selectFrom('places')
    .select('uuid')
    .where('external_place_id', '=', externalId)
    .where('status', '=', 'approved')
    .where('id', '<>', placeId)
    .executeTakeFirst();
}

/**
 * 409 naming the holder: only ever a place the caller may see. `path`: the posted field, or on
 * approval the place's own (`properties.external_place_id`).
 */
export function externalIdTaken(uuid: string | undefined, path = 'body.external_place_id'): DomainError {
  return conflictError('external_place_id is already used', [
    {
      path,
      message: uuid ? `already used by place ${uuid}` : 'already used by another place',
    },
  ]);
}

/** Whether `error` is PostgreSQL refusing a second holder of an external id. */
export function isExternalIdViolation(error: unknown): boolean {
  const e = error as { code?: string; constraint?: string };
  return e.code === '23505' && EXTERNAL_ID_INDEXES.includes(e.constraint ?? '');
}
