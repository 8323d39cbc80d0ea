import { randomBytes } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import { type Found, type PageRequest, pageOf } from '../../db/paging.ts';
import type { ShareActivitiesTable } from '../../db/schema/shares.ts';
import type { ActivityRow } from '../../db/schema/tracking.ts';
import { invalid, notFoundError } from '../../errors.ts';
import { readActivityContent } from '../activities/content-read.ts';
import type { ActivityContent } from '../activities/data.ts';
import { sportAncestry } from '../records/records-store.ts';
import { type SportFamily, sportFamily } from '../thumbnail/placeholder.ts';
import { isFootSport } from './foot-sports.ts';

export type ShareRow = Selectable<ShareActivitiesTable>;

/** Random bytes of a share token: 256 bits (the issue asks for at least 128), 43 base64url characters. */
export const SHARE_TOKEN_BYTES = 32;

/**
 * Live shares one activity may have at once. Each share is its own revocable link (one per
 * place it was posted); beyond a handful, a client is creating them in a loop.
 */
export const MAX_SHARES_PER_ACTIVITY = 20;

/** What a share token looks like: base64url, at least 22 characters (128 bits). Anything else is no share. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{22,128}$/;

export function newShareToken(): string {
  return randomBytes(SHARE_TOKEN_BYTES).toString('base64url');
}

/**
 * Shares `activityId` publicly for `userId`: the user named in the body must be the caller, the
 * activity one of theirs (another user's activity and a missing one get the same answer, so
 * nothing leaks), and the activity may not already have MAX_SHARES_PER_ACTIVITY shares.
 */
export async function createShare(
  db: Db,
  caller: { id: string },
  input: { userId: string; activityId: string },
): Promise<ShareRow> {
  if (input.userId !== caller.id)
    throw invalid([{ path: 'body.user', message: `must be your own user, /v2/users/${caller.id}` }]);
  return db.transaction().execute(async (trx) => {
    // Locks the activity row: two concurrent shares cannot both pass the limit below.
    const activity = await trx
      .selectFrom('activities')
      .select('id')
      .where('id', '=', input.activityId)
      .where('user_id', '=', caller.id)
      .forUpdate()
      .executeTakeFirst();
    if (!activity) throw invalid([{ path: 'body.activity', message: 'no activity of yours has this IRI' }]);
    const { n } = await trx
      .selectFrom('share_activities')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('activity_id', '=', activity.id)
      .where('user_id', '=', caller.id)
      .executeTakeFirstOrThrow();
    if (Number(n) >= MAX_SHARES_PER_ACTIVITY)
      throw invalid([
        {
          path: 'body.activity',
          message: `already has ${MAX_SHARES_PER_ACTIVITY} shares; delete one (DELETE /v2/share_activities/{id}) first`,
        },
      ]);
    return trx
      .insertInto('share_activities')
      .values({ token: newShareToken(), user_id: caller.id, activity_id: activity.id })
      .returningAll()
      .executeTakeFirstOrThrow();
  });
}

/** The share a public token names, for anyone holding it; 404 when there is none (revoked, never issued). */
export async function shareByToken(db: Db, token: string): Promise<ShareRow> {
  const row = TOKEN_SHAPE.test(token)
    ? await db.selectFrom('share_activities').selectAll().where('token', '=', token).executeTakeFirst()
    : undefined;
  if (!row) throw notFoundError('No such share (it may have been revoked)');
  return row;
}

/** Revokes a share of the caller: its page answers 404 from now on. */
export async function revokeShare(db: Db, caller: { id: string }, token: string): Promise<void> {
  const deleted = TOKEN_SHAPE.test(token)
    ? await db
        .deleteFrom('share_activities')
        .where('token', '=', token)
        .where('user_id', '=', caller.id)
        .executeTakeFirst()
    : undefined;
  if (!deleted || deleted.numDeletedRows === 0n) throw notFoundError('No such share (it may have been revoked)');
}

export interface ShareFilters extends PageRequest {
  /** User ids (`user`, `user[]`): only the caller's own shares can match. */
  users?: string[] | undefined;
  /** Activity ids (`activity`, `activity[]`). */
  activities?: string[] | undefined;
}

/** A share with the activity it shows. */
export interface SharedActivity {
  share: ShareRow;
  row: ActivityRow;
}

/** A share with its activity and the activity's streams (the public page and the created share). */
export interface SharedActivityContent extends SharedActivity {
  content: ActivityContent;
}

/** The share and its activity with streams; 404 when the token names no share. */
export async function sharedActivityContent(db: Db, share: ShareRow): Promise<SharedActivityContent> {
  const found = await readActivityContent(db, share.activity_id);
  // The activity's deletion deletes its shares: a share without activity is one deleted meanwhile.
  if (!found) throw notFoundError('No such share (it may have been revoked)');
  return { share, ...found };
}

/** One page of the caller's shares with their activities, newest first, and how many there are. */
export async function listShares(
  db: Db,
  caller: { id: string },
  filters: ShareFilters,
): Promise<Found<SharedActivity>> {
  if (filters.users && !filters.users.includes(caller.id)) return { items: [], total: 0 };
  let query = db.selectFrom('share_activities').where('user_id', '=', caller.id);
  if (filters.activities) {
    if (filters.activities.length === 0) return { items: [], total: 0 };
    query = query.where('activity_id', 'in', filters.activities);
  }
  const { items: shares, total } = await pageOf(
    query.selectAll().orderBy('created_at', 'desc').orderBy('token', 'desc'),
    filters,
  );
  const ids = [...new Set(shares.map((s) => s.activity_id))];
  const activities = ids.length
    ? await db.selectFrom('activities').selectAll().where('user_id', '=', caller.id).where('id', 'in', ids).execute()
    : [];
  const byId = new Map(activities.map((a) => [a.id, a]));
  const items = shares.flatMap((share) => {
    const row = byId.get(share.activity_id);
    return row ? [{ share, row }] : [];
  });
  return { items, total };
}

/** A `dataSummaries` value with its datatype's English name and unit (the share page's summary). */
export interface SummaryLine {
  datatypeId: number;
  label: string;
  /** The referential's unit (`m`, `m/h`, `s`, `bpm`, `none`...). */
  unit: string;
  value: number;
}

/** What the share page shows besides the activity itself: its sport and its summary with units. */
export interface SharePageFacts {
  sportName: string;
  sportFamily: SportFamily;
  /** A foot sport: speeds are shown as a pace (min/km). */
  pace: boolean;
  summary: SummaryLine[];
}

const english = (names: Record<string, string | null | undefined>, fallback: string) =>
  names.en ?? Object.values(names).find((v): v is string => typeof v === 'string') ?? fallback;

/** The sport's name and family and each summary value's datatype name and unit, from the referentials. */
export async function sharePageFacts(db: Db, row: ActivityRow, content: ActivityContent): Promise<SharePageFacts> {
  const ids = [...content.summaries.keys()];
  const [sport, ancestry, datatypes] = await Promise.all([
    db.selectFrom('sports').select(['names', 'universe_id']).where('id', '=', row.sport_id).executeTakeFirst(),
    sportAncestry(db, row.sport_id),
    ids.length
      ? db.selectFrom('datatypes').select(['id', 'unit', 'names']).where('id', 'in', ids).execute()
      : Promise.resolve([]),
  ]);
  const byId = new Map(datatypes.map((d) => [d.id, d]));
  const summary = [...content.summaries].flatMap(([datatypeId, value]) => {
    const datatype = byId.get(datatypeId);
    return datatype
      ? [{ datatypeId, value, unit: datatype.unit, label: english(datatype.names, `Datatype ${datatypeId}`) }]
      : [];
  });
  return {
    sportName: sport ? english(sport.names, `Sport ${row.sport_id}`) : `Sport ${row.sport_id}`,
    sportFamily: sportFamily(sport?.universe_id),
    pace: isFootSport(ancestry),
    summary,
  };
}
