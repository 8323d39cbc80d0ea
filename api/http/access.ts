import type { Middleware } from 'koa';
import { bearerToken, requireBearer, type TokenVerifier } from './auth.ts';
import { unauthorized } from './errors.ts';

/**
 * Who may call an operation: `public` looks at no credentials; `optional` needs none, but a
 * token that is sent must be valid (it may show the caller more, e.g. their pending places);
 * `bearer` needs a valid JWT.
 */
export type Access = 'public' | 'optional' | 'bearer';

export function optionalBearer(verifier: TokenVerifier): Middleware {
  return async (ctx, next) => {
    const token = bearerToken(ctx.get('authorization'));
    if (token) ctx.state.principal = await verifier.verify(token);
    else if (ctx.get('authorization')) throw unauthorized('The Authorization header must be "Bearer <token>"');
    await next();
  };
}

/** The middleware that enforces an access level (sets ctx.state.principal when a token is verified). */
export function accessMiddleware(verifier: TokenVerifier, access: Access): Middleware[] {
  if (access === 'bearer') return [requireBearer(verifier)];
  if (access === 'optional') return [optionalBearer(verifier)];
  return [];
}
