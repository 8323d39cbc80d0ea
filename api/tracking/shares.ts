import type { Readable } from 'node:stream';
import type { Context } from 'koa';
import { z } from 'zod';
import { pacedStream } from '../../shared/runtime/paced-stream.ts';
import { activityFields } from '../../shared/tracking/activities/fields.ts';
import { jsonWithStreamsChunks } from '../../shared/tracking/activities/json.ts';
import { formatDateTime } from '../../shared/tracking/dates.ts';
import { iri, TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import {
  createShare,
  listShares,
  MAX_SHARES_PER_ACTIVITY,
  revokeShare,
  type SharedActivity,
  type SharedActivityContent,
  shareByToken,
  sharedActivityContent,
} from '../../shared/tracking/shares/store.ts';
import type { AppContext } from '../context.ts';
import type { HydraView } from '../http/formats/format.ts';
import { contextIri } from '../http/formats/hydra.ts';
import type { ApiRouter } from '../http/route.ts';
import { activityFileRepresentations } from './activity-files.ts';
import { dateTimeOut, iriOf, listFilterOf, listFilterShape, pagingShape, writeBody } from './schemas.ts';
import { sendSharePage, shareLinkPath, shareLinkRoute } from './share-link.ts';
import { trackingResource } from './tracking-resource.ts';

const PATH = '/share_activities';

/** A share as every read answers it; the activity is embedded whole (with its streams on one share). */
const shareSchema = z
  .object({
    id: z.string().meta({ description: 'the public token (256 random bits, base64url)' }),
    user: z.string().meta({ format: 'iri-reference', example: '/v2/users/a1b2c3' }),
    activity: z.object({}).loose().meta({
      description:
        'the shared Activity, embedded: with `datastream` and `locations` on POST and GET of one share, without them in the list',
    }),
    url: z.url().meta({
      description:
        'the link to send: it opens the activity’s page in any browser, without an API key, until the share is deleted',
    }),
    createdAt: dateTimeOut,
    updatedAt: dateTimeOut.meta({ description: 'a share never changes: its creation time' }),
  })
  .meta({ id: 'ShareActivity' });

/** What a client sends back from a read (`id`, dates, JSON-LD members) is ignored; anything else unknown is a 422. */
const createBody = writeBody(
  'ShareActivity',
  {
    user: iriOf('users').meta({ description: "the caller's own IRI" }),
    activity: iriOf('activities').meta({ description: 'one of the caller’s activities' }),
  },
  ['id', 'url', 'createdAt', 'updatedAt'],
);

const listQuery = z.object({
  ...listFilterShape('user', iriOf('users')),
  ...listFilterShape('activity', iriOf('activities')),
  ...pagingShape,
});

/** Any text: a malformed token is simply no share (404), like a revoked one. */
const tokenParams = z.object({ id: z.string().max(256) });

const shareIri = (token: string) => iri('share_activities', token);

/** The members of a share but its activity (no `@context`, `@id`, `@type`). */
function shareFields(s: SharedActivity, publicUrl: string) {
  return {
    id: s.share.token,
    user: iri('users', s.share.user_id),
    url: `${publicUrl}${shareLinkPath(s.share.token)}`,
    createdAt: formatDateTime(s.share.created_at),
    updatedAt: formatDateTime(s.share.created_at),
  };
}

/** The list's members: the activity as a node without its streams. */
const shareViewOf = (publicUrl: string): HydraView<SharedActivity, typeof shareSchema> => ({
  type: 'ShareActivity',
  path: `${TRACKING_PREFIX}${PATH}`,
  id: (s) => s.share.token,
  fields: (s) => ({
    ...shareFields(s, publicUrl),
    activity: { '@id': iri('activities', s.row.id), '@type': 'Activity', ...activityFields(s.row) },
  }),
});

/**
 * One share with its whole activity, streams included, as JSON sent while it is written: the
 * share's members, then `activity`, whose document is written by the activities' writer (streams
 * straight from their columns, no object per sample), one chunk per turn of the event loop.
 */
function shareDocument(
  found: SharedActivityContent,
  jsonLd: boolean,
  shareView: HydraView<SharedActivity, typeof shareSchema>,
  publicUrl: string,
): Readable {
  const activityHead = jsonLd
    ? { '@id': iri('activities', found.row.id), '@type': 'Activity', ...activityFields(found.row) }
    : activityFields(found.row);
  const head = {
    ...(jsonLd
      ? {
          '@context': contextIri(shareView),
          '@id': shareIri(found.share.token),
          '@type': shareView.type,
        }
      : {}),
    ...shareFields(found, publicUrl),
  };
  const text = JSON.stringify(head);
  function* chunks() {
    yield `${text.slice(0, -1)},"activity":`;
    yield* jsonWithStreamsChunks(activityHead, found.content);
    yield '}';
  }
  return pacedStream(chunks());
}

/** ld+json (default), plain JSON, or the public HTML page of the activity. */
function shareRepresentations(app: AppContext, shareView: HydraView<SharedActivity, typeof shareSchema>) {
  const json = (jsonLd: boolean) => (found: unknown) =>
    shareDocument(found as SharedActivityContent, jsonLd, shareView, app.config.PUBLIC_URL);
  return {
    'application/ld+json': json(true),
    'application/json': json(false),
    'text/html': (found: unknown, ctx: Context) => sendSharePage(app, ctx, found as SharedActivityContent),
  };
}

/**
 * /v2/share_activities (docs/tracking-sharing-thumbnails.md): a user shares one of their
 * activities and gets a public token; anyone with the token and an API key reads the activity
 * (ld+json, json, or an HTML page with the track and charts) until the owner deletes the share;
 * a person opens the page from the share's `url` in a browser, with no key (share-link.ts).
 */
export function sharesResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  const shareView = shareViewOf(app.config.PUBLIC_URL);
  const representations = shareRepresentations(app, shareView);
  trackingResource(router, app, {
    path: PATH,
    itemParams: tokenParams,
    item: shareSchema,
    hydra: shareView,
    notFound: 'No such share (it may have been revoked)',
  })
    .list({
      summary: "The caller's shares (their activities without streams), newest first",
      description:
        "Only the caller's shares. `user` / `user[]` and `activity` / `activity[]` take IRIs (another user's IRI matches nothing). Paging: `page`, `limit` (default 30, at most 100).",
      query: listQuery,
      // Plain JSON: a bare array whose activities lose their `@`-members too.
      representations: {
        // The handler below always answers a page of SharedActivity.
        'application/json': (page) =>
          (page as unknown as { items: SharedActivity[] }).items.map((item) => ({
            ...shareFields(item, app.config.PUBLIC_URL),
            activity: activityFields(item.row),
          })),
      },
      handler: async ({ query, caller: user, principal }) => {
        const found = await app.reads.read(principal.accountId, ({ db }) =>
          listShares(db, user, {
            users: listFilterOf<string>(query, 'user'),
            activities: listFilterOf<string>(query, 'activity'),
            page: query.page,
            limit: query.limit,
          }),
        );
        return { ...found, page: query.page, limit: query.limit };
      },
    })
    .create({
      summary: 'Share one of your activities publicly',
      description: `\`user\` must be the caller's IRI and \`activity\` one of the caller's activities (otherwise 422 naming the field; another user's activity is answered like a missing one). An activity has at most ${MAX_SHARES_PER_ACTIVITY} shares at once. Answers 201 with the share: its \`id\` is the public token, \`activity\` the whole Activity with its streams.`,
      body: createBody,
      representations,
      handler: async ({ body, ctx, caller: user }) => {
        const share = await createShare(db, user, { userId: body.user, activityId: body.activity });
        // Set here: the representations write the body themselves.
        ctx.set('Location', `${app.config.PUBLIC_URL}${shareIri(share.token)}`);
        return sharedActivityContent(db, share);
      },
    })
    .get({
      summary: 'A shared activity, for anyone holding its token (API key only)',
      description:
        'Needs only `x-api-key` (no bearer token). `Accept: application/ld+json` (default) or `application/json` answers the share with the whole Activity (datastream and locations); `text/html` answers a page showing the activity: its track, summary and charts of speed, heart rate and elevation, with no external resource (strict Content-Security-Policy). A revoked or unknown token is a 404. `application/gpx+xml` and `application/tcx+xml` answer the activity as GPX 1.1 or TCX v2 (docs/tracking-files.md).',
      access: 'key',
      representations: { ...representations, ...activityFileRepresentations },
      handler: async ({ params }) => sharedActivityContent(db, await shareByToken(db, params.id)),
    })
    .remove({
      summary: 'Revoke a share of yours (its token answers 404 from then on)',
      handler: async ({ params, caller }) => {
        await revokeShare(db, caller, params.id);
      },
    });
  // The share's `url`: the same page for a person's browser, which sends no API key.
  shareLinkRoute(router, app);
}
