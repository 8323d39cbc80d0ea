import type { Context, Middleware } from 'koa';
import type { Viewer } from '../../shared/places/activities.ts';
import { type Locale, readLocale, writeLocale } from '../../shared/places/locale.ts';
import { bearerToken, hasRole, type TokenVerifier } from '../http/auth.ts';
import { forbidden, unauthorized, unprocessable } from '../http/errors.ts';

/** GETs need no token, but one that is sent must be valid: it lets creators and staff see pending places. */
export function optionalBearer(verifier: TokenVerifier): Middleware {
  return async (ctx, next) => {
    const token = bearerToken(ctx.get('authorization'));
    if (token) ctx.state.principal = await verifier.verify(token);
    else if (ctx.get('authorization')) throw unauthorized('The Authorization header must be "Bearer <token>"');
    await next();
  };
}

export function viewerOf(ctx: Context): Viewer | undefined {
  const p = ctx.state.principal;
  return p ? { accountId: p.accountId, staff: hasRole(p, 'staff') } : undefined;
}

/** The caller of a route behind requireBearer. */
export function callerOf(ctx: Context): Viewer {
  const v = viewerOf(ctx);
  if (!v) throw unauthorized();
  return v;
}

export function requireStaff(ctx: Context): void {
  if (!hasRole(ctx.state.principal, 'staff')) throw forbidden('Only staff accounts may do this');
}

export const readLocaleOf = (ctx: Context): Locale => readLocale(ctx.get('accept-language') || undefined);

/** Locale to store notes under; an unsupported Accept-Language is a 422 naming the header. */
export function writeLocaleOf(ctx: Context): Locale {
  const header = ctx.get('accept-language') || undefined;
  const locale = writeLocale(header);
  if (!locale)
    throw unprocessable([
      {
        path: 'headers.accept-language',
        message: `unsupported locale "${header}" for writing notes; use one of en, en-GB, fr-FR, fr-CA, pt-PT, pt-BR, es-ES, es-MX, it, de, ja, cn, pl`,
      },
    ]);
  return locale;
}

export const DELETED = { message: 'Deleted' } as const;
