import type { Context } from 'koa';
import { type Locale, readLocale } from '../../shared/places/locale.ts';
import type { AppContext } from '../context.ts';
import { ApiRouter } from '../http/route.ts';

/** The places service's router: /api/v1, problem+json errors. */
export function placesRouter(app: AppContext): ApiRouter {
  return new ApiRouter({
    prefix: '/api/v1',
    errorFormat: 'problem',
    registry: app.registry,
    bodyLimitBytes: app.config.bodyLimitBytes,
    tag: 'places',
  });
}

export const readLocaleOf = (ctx: Context): Locale => readLocale(ctx.get('accept-language') || undefined);
export const acceptLanguage = (ctx: Context): string | undefined => ctx.get('accept-language') || undefined;

/** The body the places spec shows after a delete. */
export const DELETED = { message: 'Deleted' } as const;
