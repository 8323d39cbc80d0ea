import { z } from 'zod';
import type { ActivityRow } from '../../shared/db/schema/tracking.ts';
import { notFoundError } from '../../shared/errors.ts';
import { decodeCursor } from '../../shared/tracking/sharing/cursor.ts';
import { acceptedShareOwner, sharersOf, viewerOf } from '../../shared/tracking/sharing/share-users.ts';
import {
  feedActivities,
  findSharedActivity,
  type KeysetPage,
  listPublicActivities,
  listSharedActivities,
} from '../../shared/tracking/sharing/shared-activities.ts';
import { listSumups } from '../../shared/tracking/sumups/read.ts';
import type { AppContext } from '../context.ts';
import type { ApiRouter } from '../http/route.ts';
import { activityDocument, activityFilterOf, activitySchema, activityView, listQuery } from './activity-schemas.ts';
import { pagingShape } from './schemas.ts';
import { idParams, trackingResource } from './tracking-resource.ts';
import { sumupFilterOf, sumupSchema, listQuery as sumupsQuery, sumupView } from './user-sumups.ts';

/**
 * Other users' activities (docs/tracking-sharing-users.md): a friend's (`/v2/friends/...`, v2.26),
 * everyone's public ones (`/v2/public_activities`), the feed of the caller's friends
 * (`/v2/feed`) and a friend's statistics (`/v2/share_users_stats/{id}`, v2.26). Who may see what
 * is decided on the primary at every request (a share deleted a moment ago opens nothing); the
 * rows come from the replica when the caller has not just written (api/reads.ts).
 */

const friendParams = z.object({ friend_ldid: z.string().min(1).max(128) });
const friendItemParams = friendParams.extend(idParams.shape);

const cursorQuery = {
  cursor: z
    .string()
    .max(256)
    .transform((value, ctx) => {
      const position = decodeCursor(value);
      if (!position) {
        ctx.addIssue({ code: 'custom', message: 'is not a cursor of this list: follow `hydra:next`' });
        return z.NEVER;
      }
      return position;
    })
    .optional()
    .meta({ description: 'where the page starts: the value `hydra:next` carries; none for the newest' }),
  limit: pagingShape.limit,
};
const keysetQuery = z.object(cursorQuery);

/** A cursor-paged answer as the Hydra format writes it (api/http/formats/hydra.ts). */
const keysetAnswer = (found: KeysetPage<ActivityRow>, limit: number) => ({
  items: found.items,
  page: 1,
  limit,
  keyset: { param: 'cursor', next: found.next },
});

const detail = (jsonLd: boolean) => (found: Parameters<typeof activityDocument>[0]) => activityDocument(found, jsonLd);
const documents = { 'application/ld+json': detail(true), 'application/json': detail(false) };

const notFriend = (ldid: string) => notFoundError(`No user ${ldid} shares their activities with you`);

export function sharedActivitiesResource(router: ApiRouter, app: AppContext): void {
  /** The friend's id once checked on the primary: an accepted share from them to the caller, now. */
  const friendOf = async (callerId: string, friendId: string) => {
    if ((await viewerOf(app.db, callerId, friendId)) !== 'follower') throw notFriend(friendId);
    return friendId;
  };

  trackingResource(router, app, {
    path: '/friends/:friend_ldid/activities',
    params: friendParams,
    itemParams: friendItemParams,
    item: activitySchema,
    hydra: activityView,
    notFound: 'No such activity of a user who shares with you (or not shown to followers)',
    tag: 'tracking sharing',
  })
    .list({
      summary: 'The activities a friend shows their followers (v2.26)',
      description:
        '`friend_ldid`: a user who shares with the caller (an accepted share; else 404). Their activities of visibility `followers` or `public`, with the filters and orders of GET /v2/activities (`sport`, `startdate[...]`, `createdAt[...]`, `updatedAt[...]`, `trackFlag`, `order[startdate|createdAt|updatedAt|duration|id]`, paging). `thumbnail` is null; `latitude`/`longitude`/`elevation` are null when the map is not shown to followers or its ends are hidden (docs/tracking-sharing-users.md).',
      query: listQuery,
      handler: async ({ params, query, ctx, caller, principal }) => {
        const owner = await friendOf(caller.id, params.friend_ldid);
        const found = await app.reads.read(principal.accountId, ({ db }) =>
          listSharedActivities(db, owner, activityFilterOf(query, ctx.querystring), query),
        );
        return { ...found, page: query.page, limit: query.limit };
      },
    })
    .get({
      summary: "A friend's activity with its datastream and the locations shown to followers (v2.26)",
      description:
        '404 unless `friend_ldid` shares with the caller and the activity is theirs and shown to followers. `locations` holds the track only where `mapVisibility` shows it to followers, without its first and last `mapHiddenEnds` metres; `{}` otherwise.',
      representations: documents,
      handler: async ({ params, caller, principal }) => {
        const owner = await friendOf(caller.id, params.friend_ldid);
        return app.reads.read(principal.accountId, ({ db }) => findSharedActivity(db, owner, 'follower', params.id));
      },
    });

  trackingResource(router, app, {
    path: '/public_activities',
    item: activitySchema,
    hydra: activityView,
    notFound: 'No such public activity',
    tag: 'tracking sharing',
  })
    .list({
      summary: "Everyone's public activities, newest first",
      description:
        'Activities of visibility `public`, of every user, by `startdate` descending (ties by id), paged by cursor: follow `hydra:next` (`cursor`, `limit` 1 to 100, default 30). As any other user sees them: no thumbnail, no start point where the map is not public or its ends are hidden.',
      query: keysetQuery,
      handler: async ({ query, principal }) => {
        const found = await app.reads.read(principal.accountId, ({ db }) =>
          listPublicActivities(db, query.cursor, query.limit),
        );
        return keysetAnswer(found, query.limit);
      },
    })
    .get({
      summary: 'A public activity as everyone sees it',
      description:
        'Any signed-in caller, its owner included (a preview of what others see): 404 unless its visibility is `public`. `locations` only where `mapVisibility` is `public`, without the hidden ends.',
      representations: documents,
      handler: async ({ params, principal }) =>
        app.reads.read(principal.accountId, ({ db }) => findSharedActivity(db, undefined, 'public', params.id)),
    });

  trackingResource(router, app, {
    path: '/feed',
    item: activitySchema,
    hydra: activityView,
    notFound: 'No such activity',
    tag: 'tracking sharing',
  }).list({
    summary: "The caller's feed: the latest activities of the users who share with them",
    description:
      "Activities shown to followers (`followers` or `public`) of every user whose share the caller accepted, newest first (`startdate` descending, ties by id), paged by cursor: follow `hydra:next` (`cursor`, `limit` 1 to 100, default 30). Masked as a friend's activities are. The caller's own activities are not in it.",
    query: keysetQuery,
    handler: async ({ query, caller, principal }) => {
      const owners = await sharersOf(app.db, caller.id);
      const found = await app.reads.read(principal.accountId, ({ db }) =>
        feedActivities(db, owners, query.cursor, query.limit),
      );
      return keysetAnswer(found, query.limit);
    },
  });

  trackingResource(router, app, {
    path: '/share_users_stats/:id',
    params: idParams,
    itemPath: '',
    item: sumupSchema,
    hydra: sumupView,
    notFound: 'No such share given to you and accepted',
    tag: 'tracking sharing',
  }).list({
    summary: "The statistics of a user who shares with the caller (v2.26's path)",
    description:
      "`id`: a share given to the caller and accepted (else 404). The owner's UserSumups, with the filters, orders and paging of GET /v2/user_sumups. They count every activity of the owner, private ones included: totals show no single activity, and a user who wants none of them seen does not share.",
    query: sumupsQuery,
    handler: async ({ params, query, ctx, caller, principal }) => {
      const owner = await acceptedShareOwner(app.db, caller.id, params.id);
      const found = await app.reads.read(principal.accountId, ({ db }) =>
        listSumups(db, owner, sumupFilterOf(query, ctx.querystring), query),
      );
      return { ...found, page: query.page, limit: query.limit };
    },
  });
}
