import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import type { Context, Middleware } from 'koa';
import { openFailedRows, settleOpenedRows } from '../../shared/queue/outbox-reopen.ts';
import { isQueueName, QUEUE_NAMES } from '../../shared/queue/queues.ts';
import { forgeableCookies, readAccountSession, signedCookieReader } from '../accounts/account-session.ts';
import { escapeHtml, page } from '../accounts/html.ts';
import type { AppContext } from '../context.ts';
import { HttpError } from '../http/errors.ts';

export const DASHBOARD_PATH = '/admin/queues';

/**
 * bull-board's page loads its scripts, styles, images and translations from its own static
 * files and talks to its own JSON API, all under DASHBOARD_PATH; nothing else is allowed (its
 * page also links a web font from Google, which this refuses: the system font is used instead).
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  // The page sets <base href="/admin/queues/"> to resolve its assets.
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The retry answers of bull-board's API: one job, and every job of a state. */
const RETRY_ONE = /^\/api\/queues\/([^/]+)\/([^/]+)\/retry$/;
const RETRY_ALL = /^\/api\/queues\/([^/]+)\/retry\/failed$/;

const decoded = (part: string | undefined) => {
  try {
    return part === undefined ? undefined : decodeURIComponent(part);
  } catch {
    return undefined;
  }
};

/**
 * Staff's queue dashboard (bull-board) at /admin/queues: every queue of the QueueSet, its jobs
 * by state, failed ones retried or removed (docs/operations.md). Signed in as on the account page
 * (/account), with an account holding the `staff` role: no sign-in answers 401, another account
 * 403. A retry through it reopens the job's outbox rows, as `npm run jobs -- retry` does.
 */
export function queuesDashboard(app: AppContext): Middleware {
  const adapter = new KoaAdapter().setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: QUEUE_NAMES.map((name) => new BullMQAdapter(app.queues.get(name))),
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: 'Sports backend jobs' } },
  });
  const board = adapter.registerPlugin();
  const cookies = signedCookieReader(app.config.COOKIE_KEYS);
  const forgeable = forgeableCookies(app.config);
  if (forgeable)
    app.logger.warn(
      'COOKIE_KEYS is published, short or predictable (docs/operations.md, "Cookie keys and sign-ins"): the queue dashboard accepts no sign-in',
    );

  async function refusal(ctx: Context): Promise<Refusal | undefined> {
    if (forgeable)
      return {
        status: 401,
        message:
          'The dashboard is off until COOKIE_KEYS holds a key of your own (this one is published, short or predictable)',
      };
    const session = await readAccountSession(app.db, cookies(ctx));
    if (!session)
      return {
        status: 401,
        message: 'Sign in on the account page (/account) with a staff account, then open this page again',
      };
    if (!session.roles.includes('staff')) return { status: 403, message: 'Only staff may see the queue dashboard' };
    return undefined;
  }

  /**
   * bull-board retries the jobs itself; their outbox rows are opened around it as
   * `npm run jobs -- retry` does (shared/queue/outbox-reopen.ts).
   */
  async function retryingRows(ctx: Context, subpath: string, retry: () => Promise<void>): Promise<void> {
    const one = RETRY_ONE.exec(subpath);
    const queue = decoded((one ?? RETRY_ALL.exec(subpath))?.[1]);
    if (ctx.method !== 'PUT' || !queue || !isQueueName(queue)) return retry();
    const jobId = decoded(one?.[2]);
    const opened = await openFailedRows(app.db, queue, jobId === undefined ? undefined : [jobId]);
    try {
      await retry();
    } finally {
      await settleOpenedRows(app.db, app.queues.get(queue), opened);
    }
  }

  return async (ctx, next) => {
    if (ctx.path !== DASHBOARD_PATH && !ctx.path.startsWith(`${DASHBOARD_PATH}/`)) return next();
    ctx.set('Content-Security-Policy', CSP);
    ctx.set('Cache-Control', 'no-store');
    const refused = await refusal(ctx);
    if (refused) return refuse(ctx, refused);
    // The sign-in cookie is SameSite=Strict already; a browser's word that a change comes from
    // another site is refused as well.
    const site = ctx.get('sec-fetch-site');
    if (!['GET', 'HEAD'].includes(ctx.method) && site && site !== 'same-origin')
      throw new HttpError(403, 'Forbidden', 'Changes to jobs are accepted from the dashboard page only');
    await retryingRows(ctx, ctx.path.slice(DASHBOARD_PATH.length), () => board(ctx, next));
  };
}

interface Refusal {
  status: 401 | 403;
  message: string;
}

/**
 * A browser opening the page gets a page saying where to sign in; anything else (the
 * dashboard's own API calls) the problem document.
 */
function refuse(ctx: Context, { status, message }: Refusal): void {
  if (ctx.method !== 'GET' || ctx.accepts('json', 'html') !== 'html')
    throw new HttpError(status, status === 401 ? 'Unauthorized' : 'Forbidden', message);
  ctx.status = status;
  ctx.type = 'html';
  // This page is ours, not bull-board's: its inline style is allowed, nothing else.
  ctx.set(
    'Content-Security-Policy',
    "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
  );
  const title = status === 401 ? 'Sign in as staff' : 'Staff only';
  ctx.body = page(
    title,
    `<h1>${title}</h1><p role="alert">${escapeHtml(message)}.</p><p><a href="/account">Your account page</a></p>`,
  );
}
