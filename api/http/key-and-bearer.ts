import type { Middleware } from 'koa';
import { apiKeyHash, noteApiKeyUse } from '../../shared/accounts/api-keys.ts';
import { findTrackingCredentials } from '../../shared/tracking/users/credentials.ts';
import type { AppContext } from '../context.ts';
import { apiKeyError, requireApiKey } from './api-key.ts';
import { authorizePrincipal, bearerToken, requireBearer, tokenRef } from './auth.ts';

/**
 * `bearer+key` (every tracking call but the share page): a live `x-api-key` and a bearer token
 * holding the request's scope, as requireApiKey then requireBearer check them, but the key, the
 * token's account state and the caller's tracking user are read in one statement
 * (shared/tracking/users/credentials.ts); sets ctx.state.apiKey and ctx.state.principal (with its
 * trackingUser). A request refused before that statement (no key, a token that does not verify,
 * an external provider's token, no such account) takes the two checks one after the other, so
 * each refusal says the same as before: the key's first, so that a client without a live key
 * learns nothing about its token.
 */
export function requireKeyAndBearer(app: Pick<AppContext, 'verifier' | 'db'>): Middleware {
  const keyThenBearer = [requireApiKey(app.db), requireBearer(app.verifier)] as const;
  const oneAfterTheOther: Middleware = (ctx, next) => keyThenBearer[0](ctx, () => keyThenBearer[1](ctx, next));
  return async (ctx, next) => {
    const keyHash = apiKeyHash(ctx.get('x-api-key').trim());
    const token = bearerToken(ctx.get('authorization'));
    const claims = keyHash && token ? await app.verifier.signedClaims(token).catch(() => undefined) : undefined;
    if (!keyHash || !claims || claims.kind === 'external') return oneAfterTheOther(ctx, next);
    const found = await findTrackingCredentials(app.db, { keyHash, token: tokenRef(claims.kind, claims.payload) });
    if (!found) return oneAfterTheOther(ctx, next);
    if (!found.key) throw apiKeyError('The API key is invalid or revoked');
    await noteApiKeyUse(app.db, found.key);
    ctx.state.apiKey = { keyId: found.key.id, clientId: found.key.clientId };
    const principal = app.verifier.principalOf(claims.kind, claims.payload, found.state);
    principal.trackingUser = found.user;
    ctx.state.principal = authorizePrincipal(principal, ctx);
    await next();
  };
}
