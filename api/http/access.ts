import type { Middleware } from 'koa';
import type { AppContext } from '../context.ts';
import { requireApiKey } from './api-key.ts';
import { authorizeBearer, bearerToken, requireBearer, type TokenVerifier } from './auth.ts';
import { unauthorized } from './errors.ts';
import { requireKeyAndBearer } from './key-and-bearer.ts';
import type { Security } from './route.ts';

/**
 * Who may call an operation: `public` looks at no credentials; `optional` needs none, but a
 * token that is sent must be valid (it may show the caller more, e.g. their pending places);
 * `bearer` needs a valid JWT; `key` a live `x-api-key` (the tracking share page); `bearer+key`
 * both (every other tracking call).
 */
export type Access = 'public' | 'optional' | 'bearer' | 'key' | 'bearer+key';

export function optionalBearer(verifier: TokenVerifier): Middleware {
  return async (ctx, next) => {
    const token = bearerToken(ctx.get('authorization'));
    if (token) ctx.state.principal = await authorizeBearer(verifier, token, ctx);
    else if (ctx.get('authorization')) throw unauthorized('The Authorization header must be "Bearer <token>"');
    await next();
  };
}

/** The middleware that enforces an access level (sets ctx.state.principal when a token is verified). */
export function accessMiddleware(app: Pick<AppContext, 'verifier' | 'db'>, access: Access): Middleware[] {
  switch (access) {
    case 'bearer':
      return [requireBearer(app.verifier)];
    case 'optional':
      return [optionalBearer(app.verifier)];
    case 'key':
      return [requireApiKey(app.db)];
    case 'bearer+key':
      // The key first: a client without a key learns nothing about its token.
      return [requireKeyAndBearer(app)];
    default:
      return [];
  }
}

/** The credentials an access level needs, for the OpenAPI document. */
export function accessSecurity(access: Access): Security[] {
  if (access === 'bearer') return ['bearer'];
  if (access === 'key') return ['apiKey'];
  if (access === 'bearer+key') return ['bearer', 'apiKey'];
  return [];
}

/** Whether an access level answers 401 (documented on every such operation). */
export function accessCanRefuse(access: Access): string | undefined {
  if (access === 'bearer') return 'Missing or invalid token';
  if (access === 'optional') return 'Invalid token (a token is optional here)';
  if (access === 'key') return 'Missing or invalid x-api-key';
  if (access === 'bearer+key') return 'Missing or invalid x-api-key or token';
  return undefined;
}
