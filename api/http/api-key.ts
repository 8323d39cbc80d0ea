import type { Middleware } from 'koa';
import { findApiKey } from '../../shared/accounts/api-keys.ts';
import type { Db } from '../../shared/db/database.ts';
import { HttpError } from './errors.ts';

/** The API key a request came with, once checked. */
export interface ApiKeyPrincipal {
  keyId: string;
  clientId: string;
}

declare module 'koa' {
  interface DefaultState {
    apiKey?: ApiKeyPrincipal;
  }
}

export const apiKeyError = (detail: string) =>
  new HttpError(401, 'Unauthorized', detail, [], { 'WWW-Authenticate': 'ApiKey header="x-api-key"' });

/**
 * Requires a live `x-api-key` (issued per OAuth client, stored hashed, revocable); sets
 * ctx.state.apiKey. Tracking routes combine it with requireBearer; its public share uses it alone.
 */
export function requireApiKey(db: Db): Middleware {
  return async (ctx, next) => {
    const key = ctx.get('x-api-key').trim();
    if (!key) throw apiKeyError('An x-api-key header is required');
    const found = await findApiKey(db, key);
    if (!found) throw apiKeyError('The API key is invalid or revoked');
    ctx.state.apiKey = { keyId: found.id, clientId: found.clientId };
    await next();
  };
}
