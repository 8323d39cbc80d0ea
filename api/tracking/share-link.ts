import type { Readable } from 'node:stream';
import type { Context } from 'koa';
import { z } from 'zod';
import { DomainError } from '../../shared/errors.ts';
import { pacedStream, pauses } from '../../shared/runtime/paced-stream.ts';
import { TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import {
  type SharedActivityContent,
  shareByToken,
  sharedActivityContent,
  sharePageFacts,
} from '../../shared/tracking/shares/store.ts';
import type { AppContext } from '../context.ts';
import { addOperation } from '../http/operation.ts';
import type { ApiRouter } from '../http/route.ts';
import { SHARE_PAGE_CSP, type SharePageInput, sharePageSteps } from './share-page.ts';

/** Where a share's page opens in a browser: the link its owner sends (the token is the secret). */
export const shareLinkPath = (token: string) => `${TRACKING_PREFIX}/share_activities/${token}/page`;

/**
 * Headers of every answer that carries a token in its URL: never stored (a revoked link stops at
 * once, also in caches), never sent on as a referrer, never indexed.
 */
function privateLinkHeaders(ctx: Context): void {
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('X-Robots-Tag', 'noindex');
}

/** The page written in slices, one per turn of the event loop (a long track takes a while to draw). */
function* sharePageChunks(input: SharePageInput): Generator<string> {
  yield yield* pauses(sharePageSteps(input));
}

/** Answers the share page of a share (its activity's track, summary and charts). */
export async function sendSharePage(app: AppContext, ctx: Context, found: SharedActivityContent): Promise<Readable> {
  const { row, content } = found;
  ctx.set('Content-Security-Policy', SHARE_PAGE_CSP);
  privateLinkHeaders(ctx);
  ctx.type = 'text/html; charset=utf-8';
  const facts = await sharePageFacts(app.db, row, content);
  return pacedStream(
    sharePageChunks({ name: row.name, startdate: row.startdate, duration: row.duration, content, ...facts }),
  );
}

/** What a person who follows a revoked or mistyped link reads: a page, not an API error. */
const GONE_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>Shared activity not found</title></head>
<body><main><h1>This shared activity cannot be shown</h1>
<p>The link may have been withdrawn by the person who shared it, or copied incompletely.</p></main></body></html>`;

/**
 * GET /v2/share_activities/{token}/page: the share page for a person with a browser, who sends
 * no API key. The token (256 random bits) is the whole secret, as for the spec's key read, and
 * deleting the share ends the link at once.
 */
export function shareLinkRoute(router: ApiRouter, app: AppContext): void {
  addOperation(router, app, {
    method: 'get',
    path: '/share_activities/:id/page',
    params: z.object({ id: z.string().max(256) }),
    access: 'public',
    success: { 200: { description: 'The share page', schema: z.string(), contentType: 'text/html' } },
    writesResponse: true,
    spec: {
      summary: 'A shared activity as a page, for anyone holding the link (no credentials)',
      description:
        "The link a share's owner sends (the share's `url`): it opens in any browser, without an API key, and shows the activity's track, summary and charts (pace for foot sports). The token in the path is the secret. A revoked, unknown or malformed token answers 404 with a short HTML page.",
      responses: {
        404: { description: 'No such share (revoked, or never issued)', schema: z.string(), contentType: 'text/html' },
      },
      handler: async ({ ctx, params }) => {
        try {
          return await sendSharePage(
            app,
            ctx,
            await sharedActivityContent(app.db, await shareByToken(app.db, params.id)),
          );
        } catch (error) {
          if (!(error instanceof DomainError) || error.kind !== 'not_found') throw error;
          ctx.status = 404;
          ctx.set('Content-Security-Policy', "default-src 'none'; base-uri 'none'; form-action 'none'");
          privateLinkHeaders(ctx);
          ctx.type = 'text/html; charset=utf-8';
          return GONE_PAGE;
        }
      },
    },
  });
}
