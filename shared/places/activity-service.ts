import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import { conflictError, invalid, notFoundError } from '../errors.ts';
import {
  type ActivityJson,
  activityJson,
  findActivity,
  flatActivityJson,
  type PlaceActivityRow,
  type Viewer,
} from './activities.ts';
import { assertMayDeleteActivity, type Caller } from './permissions.ts';
import { visiblePlace } from './place-service.ts';
import { placeActivities } from './places.ts';
import { checkActivityList, checkOneActivity, parseSportId, sportRules } from './rules.ts';
import { deleteActivity, insertActivity, setActivityTags, updateActivity, upsertActivities } from './writes.ts';

type Links = Pick<Config, 'PUBLIC_URL'>;

/** The activity of a sport at a place the viewer may see; otherwise not found. */
export async function visibleActivity(
  db: Db,
  placeId: string,
  sportId: number,
  viewer: Viewer | undefined,
): Promise<PlaceActivityRow> {
  const place = await visiblePlace(db, placeId, viewer);
  const row = await findActivity(db, place.uuid, sportId, viewer);
  if (!row) throw notFoundError(`This place has no activity of sport ${sportId}`);
  return row;
}

/** Reads an activity again after a write (the caller could see it a moment ago). */
async function reread(
  db: Db,
  config: Links,
  placeUuid: string,
  sportId: number,
  viewer: Viewer,
): Promise<ActivityJson> {
  const row = await findActivity(db, placeUuid, sportId, viewer);
  if (!row) throw notFoundError(`This place has no activity of sport ${sportId}`);
  return activityJson(row, config);
}

/** The activities-list shape: filter values flat beside sport_id and tags. */
export async function listActivities(db: Db, config: Links, placeId: string, viewer: Viewer | undefined) {
  const place = await visiblePlace(db, placeId, viewer);
  return (await placeActivities(db, [place.id])).map((a) => flatActivityJson(a, config));
}

/** Any signed-in user may add an activity to a place they can see (crowdsourcing); one per sport. */
export async function addActivityAs(
  db: Db,
  config: Links,
  caller: Caller,
  placeId: string,
  body: Record<string, unknown>,
): Promise<ActivityJson> {
  const place = await visiblePlace(db, placeId, caller);
  const input = await checkOneActivity(db, body, 'body', { update: false });
  if (!(await insertActivity(db, place.id, input, caller.accountId)))
    throw conflictError(`This place already has an activity of sport ${input.sport_id}`, [
      { path: 'body.sport_id', message: 'one activity per sport: update it with PUT' },
    ]);
  return reread(db, config, place.uuid, input.sport_id, caller);
}

/** Updates the sports the place has, creates the others; all or nothing. Returns every activity. */
export async function upsertActivitiesAs(
  db: Db,
  config: Links,
  caller: Caller,
  placeId: string,
  bodies: Record<string, unknown>[],
): Promise<ActivityJson[]> {
  const place = await visiblePlace(db, placeId, caller);
  const existing = new Map((await placeActivities(db, [place.id])).map((a) => [a.sport_id, a]));
  const inputs = await checkActivityList(db, bodies, 'body.activities', new Set(existing.keys()));
  await upsertActivities(db, place.id, inputs, existing, caller.accountId);
  return (await placeActivities(db, [place.id])).map((a) => activityJson(a, config));
}

/** Tags replaced, photo_reference set, filter values merged (null removes one); sport and user are immutable. */
export async function updateActivityAs(
  db: Db,
  config: Links,
  caller: Caller,
  placeId: string,
  sportId: number,
  body: Record<string, unknown>,
): Promise<ActivityJson> {
  const row = await visibleActivity(db, placeId, sportId, caller);
  const input = await checkOneActivity(db, body, 'body', { update: true, sportId });
  await updateActivity(db, row.id, row.attributes, input);
  return reread(db, config, row.place_uuid, row.sport_id, caller);
}

export async function deleteActivityAs(db: Db, caller: Caller, placeId: string, sportId: number): Promise<void> {
  const row = await visibleActivity(db, placeId, sportId, caller);
  assertMayDeleteActivity(caller, row);
  await deleteActivity(db, row.id);
}

/** Adds a tag allowed for the sport (adding one already there changes nothing); returns every tag. */
export async function addActivityTag(
  db: Db,
  viewer: Viewer,
  placeId: string,
  sportId: unknown,
  slug: string,
): Promise<string[]> {
  const id = parseSportId(sportId);
  if (id === undefined) throw invalid([{ path: 'body.sport_id', message: 'sport_id must be a sport id' }]);
  const row = await visibleActivity(db, placeId, id, viewer);
  const rules = (await sportRules(db, [id])).get(id);
  if (!rules?.tags.has(slug))
    throw invalid([
      {
        path: 'body.slug',
        message: `tag "${slug}" is not allowed for sport ${id} (allowed: ${[...(rules?.tags ?? [])].sort().join(', ') || 'none'})`,
      },
    ]);
  const tags = [...new Set([...row.tags, slug])].sort();
  await setActivityTags(db, row.id, tags);
  return tags;
}

export async function removeActivityTag(
  db: Db,
  viewer: Viewer,
  placeId: string,
  sportId: number,
  slug: string,
): Promise<void> {
  const row = await visibleActivity(db, placeId, sportId, viewer);
  if (!row.tags.includes(slug)) throw notFoundError(`The activity has no tag "${slug}"`);
  await setActivityTags(
    db,
    row.id,
    row.tags.filter((t) => t !== slug),
  );
}

/** Tags of every activity of a place, each once, sorted. */
export async function placeTags(db: Db, placeId: string, viewer: Viewer | undefined): Promise<string[]> {
  const place = await visiblePlace(db, placeId, viewer);
  return [...new Set((await placeActivities(db, [place.id])).flatMap((a) => a.tags))].sort();
}
