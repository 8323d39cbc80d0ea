import type { Context } from 'koa';
import type { Viewer } from '../../shared/places/activities.ts';
import { type Locale, readLocale } from '../../shared/places/locale.ts';
import { type Caller, callerFrom } from '../../shared/places/permissions.ts';
import type { AppContext } from '../context.ts';
import type { Principal } from '../http/auth.ts';
import { unauthorized } from '../http/errors.ts';
import { ApiRouter } from '../http/route.ts';

/** The places service's router: /api/v1, problem+json errors. */
export function placesRouter(app: AppContext): ApiRouter {
  return new ApiRouter({ prefix: '/api/v1', errorFormat: 'problem', registry: app.registry, tag: 'places' });
}

/** The caller of an operation whose access is `bearer`. */
export function callerOf(principal: Principal | undefined): Caller {
  if (!principal) throw unauthorized();
  return callerFrom(principal);
}

/** Who is looking: creators and staff see more than anonymous readers. */
export function viewerOf(principal: Principal | undefined): Viewer | undefined {
  return principal && callerFrom(principal);
}

export const readLocaleOf = (ctx: Context): Locale => readLocale(ctx.get('accept-language') || undefined);
export const acceptLanguage = (ctx: Context): string | undefined => ctx.get('accept-language') || undefined;

/** The body the places spec shows after a delete. */
export const DELETED = { message: 'Deleted' } as const;
