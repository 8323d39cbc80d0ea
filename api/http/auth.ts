import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  type JWTPayload,
  type JWTVerifyGetKey,
  errors as joseErrors,
  jwtVerify,
} from 'jose';
import type { Middleware } from 'koa';
import {
  ensureExternalAccount,
  findTokenState,
  type TokenRef,
  type TokenState,
} from '../../shared/accounts/token-accounts.ts';
import { isScopedService, requiredScope } from '../../shared/auth/scopes.ts';
import { LOCAL_ALGORITHMS, publicJwks } from '../../shared/auth/signing-keys.ts';
import {
  effectiveRoles,
  type TokenKind,
  tokenClientId,
  tokenOidcScopes,
  tokenRefusal,
  tokenScopes,
} from '../../shared/auth/token-rules.ts';
import type { Config } from '../../shared/config.ts';
import type { Db } from '../../shared/db/database.ts';
import type { Role } from '../../shared/db/schema/accounts.ts';
import type { TrackingUser } from '../../shared/tracking/users/store.ts';
import { HttpError, unauthorized } from './errors.ts';
import { type TokenExpectations, tokenFailure } from './token-failures.ts';
import { unavailableDependency } from './unavailable.ts';

/** Who is calling, after the token was verified and matched to an account. */
export interface Principal {
  accountId: string;
  accountNumber: number;
  ldid: string;
  /** The roles this request acts with: `staff` only with the `admin` scope. */
  roles: Role[];
  claims: JWTPayload;
  kind: TokenKind;
  /** The client the token was issued to (ours; undefined for an external provider's token). */
  clientId: string | undefined;
  /** The API scopes the token holds (shared/auth/scopes.ts). */
  scopes: ReadonlySet<string>;
  /** The OpenID Connect scopes the user allowed the token's client (what its profile may show). */
  oidcScopes: ReadonlySet<string>;
  /**
   * The account's tracking user, when the credentials' statement read it (`bearer+key`, every
   * tracking call: api/http/key-and-bearer.ts); null before their first call creates it.
   */
  trackingUser?: TrackingUser | null;
}

declare module 'koa' {
  interface DefaultState {
    principal?: Principal;
    /** The service whose router serves the request (api/app.ts): it decides the scope a token needs. */
    service?: string;
  }
}

/**
 * Verifies bearer JWTs: ours (RS256 keys from Postgres, our issuer and audience) and, when
 * configured, an external provider's (its JWKS URL, issuer, audience, algorithms). Algorithms,
 * issuer and audience are always pinned; expiry allows AUTH_CLOCK_TOLERANCE_S of skew.
 * Our tokens: access tokens must say `typ: at+jwt` and carry aud AUTH_AUDIENCE (RFC 9068), so
 * an id_token can never pass as one; id_tokens (aud = one of our registered clients) are
 * accepted only when AUTH_ACCEPT_ID_TOKENS is on (the places spec's implicit login).
 */
export class TokenVerifier {
  readonly #db: Db;
  readonly #config: Config;
  #localKeys: JWTVerifyGetKey | undefined;
  #loadedAt = 0;
  readonly #external: JWTVerifyGetKey | undefined;
  /**
   * Our access tokens already verified, by their text, oldest first: the same bytes checked
   * against the same keys can only pass again, so a repeat only has its time window checked.
   * Whether the token still holds (revocation, account, client) is read on every request.
   */
  readonly #verified = new Map<string, JWTPayload>();

  constructor(db: Db, config: Config) {
    this.#db = db;
    this.#config = config;
    if (config.AUTH_EXTERNAL_JWKS_URL) this.#external = createRemoteJWKSet(new URL(config.AUTH_EXTERNAL_JWKS_URL));
  }

  async #keys(forceReload: boolean): Promise<JWTVerifyGetKey> {
    // A kid we do not know may be a key created by another process: reload, at most every 10 s.
    if (!this.#localKeys || (forceReload && Date.now() - this.#loadedAt > 10_000)) {
      this.#localKeys = createLocalJWKSet(await publicJwks(this.#db));
      this.#loadedAt = Date.now();
      this.#verified.clear();
    }
    return this.#localKeys;
  }

  /** The verified claims of a token and its kind (401 otherwise): reads keys and clients, writes nothing. */
  async signedClaims(token: string): Promise<{ payload: JWTPayload; kind: TokenKind }> {
    const known = this.#verified.get(token);
    if (known && this.#inTimeWindow(known)) return { payload: known, kind: 'access' };
    try {
      const verified = await this.#verifyPayload(token);
      if (verified.kind === 'access') this.#remember(token, verified.payload);
      return verified;
    } catch (error) {
      // The keys could not be read (PostgreSQL down): a 503, not a verdict on the token.
      if (unavailableDependency(error)) throw error;
      throw unauthorized(tokenFailure(error, token, this.#expectations(token)));
    }
  }

  /** `exp` and `nbf` as jwtVerify checks them, with the same clock tolerance. */
  #inTimeWindow(payload: JWTPayload): boolean {
    const now = Math.floor(Date.now() / 1000);
    const tolerance = this.#config.AUTH_CLOCK_TOLERANCE_S;
    if (typeof payload.exp !== 'number' || payload.exp <= now - tolerance) return false;
    return typeof payload.nbf !== 'number' || payload.nbf <= now + tolerance;
  }

  #remember(token: string, payload: JWTPayload): void {
    if (this.#verified.size >= VERIFIED_TOKENS_KEPT) {
      const oldest = this.#verified.keys().next();
      if (!oldest.done) this.#verified.delete(oldest.value);
    }
    this.#verified.set(token, payload);
  }

  /** What a token is checked against: the external provider's settings for its tokens, else ours. */
  #expectations(token: string): TokenExpectations {
    const c = this.#config;
    if (this.#external && c.AUTH_EXTERNAL_ISSUER && safeIssuer(token) === c.AUTH_EXTERNAL_ISSUER)
      return {
        issuer: c.AUTH_EXTERNAL_ISSUER,
        audience: c.AUTH_EXTERNAL_AUDIENCE ?? c.AUTH_AUDIENCE,
        algorithms: c.AUTH_EXTERNAL_ALGORITHMS.split(',').map((a) => a.trim()),
      };
    return { issuer: c.issuer, audience: c.AUTH_AUDIENCE, algorithms: LOCAL_ALGORITHMS };
  }

  /**
   * The caller: a verified token matched to an account, refused when it no longer holds (account
   * disabled, sessions ended, token revoked, client gone, consent withdrawn).
   */
  async verify(token: string): Promise<Principal> {
    const { payload, kind } = await this.signedClaims(token);
    return this.principalOf(kind, payload, await this.#state(kind, payload));
  }

  /** The caller of verified claims, given the state of the account they name (read by the caller or by verify). */
  principalOf(kind: TokenKind, payload: JWTPayload, state: TokenState | undefined): Principal {
    if (!state) throw unauthorized('The access token does not match an account');
    const refusal = tokenRefusal(kind, payload, state);
    if (refusal) throw unauthorized(refusal);
    const scopes = tokenScopes(kind, payload, state);
    return {
      accountId: state.account.id,
      accountNumber: state.account.number,
      ldid: state.account.ldid,
      roles: effectiveRoles(state.account.roles, scopes),
      claims: payload,
      kind,
      clientId: tokenClientId(kind, payload),
      scopes,
      oidcScopes: tokenOidcScopes(kind, state),
    };
  }

  async #verifyPayload(token: string): Promise<{ payload: JWTPayload; kind: TokenKind }> {
    const c = this.#config;
    if (token.length > MAX_TOKEN_LENGTH) throw new joseErrors.JWTInvalid('token too long');
    const unverifiedIssuer = safeIssuer(token);
    if (this.#external && c.AUTH_EXTERNAL_ISSUER && unverifiedIssuer === c.AUTH_EXTERNAL_ISSUER) {
      const { payload } = await jwtVerify(token, this.#external, {
        algorithms: c.AUTH_EXTERNAL_ALGORITHMS.split(',').map((a) => a.trim()),
        issuer: c.AUTH_EXTERNAL_ISSUER,
        audience: c.AUTH_EXTERNAL_AUDIENCE ?? c.AUTH_AUDIENCE,
        clockTolerance: c.AUTH_CLOCK_TOLERANCE_S,
        requiredClaims: ['sub', 'exp'],
      });
      return { payload, kind: 'external' };
    }
    // Audience is checked below: our access tokens (typ at+jwt, aud AUTH_AUDIENCE) or, when
    // enabled, id_tokens of our registered clients (aud = client id).
    const options = {
      algorithms: [...LOCAL_ALGORITHMS],
      issuer: c.issuer,
      clockTolerance: c.AUTH_CLOCK_TOLERANCE_S,
      requiredClaims: ['sub', 'exp', 'iat', 'aud'],
    };
    let result: Awaited<ReturnType<typeof jwtVerify>>;
    try {
      result = await jwtVerify(token, await this.#keys(false), options);
    } catch (error) {
      if (!(error instanceof joseErrors.JWKSNoMatchingKey)) throw error;
      result = await jwtVerify(token, await this.#keys(true), options);
    }
    const { payload, protectedHeader } = result;
    const audiences = typeof payload.aud === 'string' ? [payload.aud] : (payload.aud ?? []);
    const isAccessToken =
      protectedHeader.typ?.toLowerCase() === 'at+jwt' || protectedHeader.typ?.toLowerCase() === 'application/at+jwt';
    if (isAccessToken && audiences.includes(c.AUTH_AUDIENCE)) return { payload, kind: 'access' };
    if (
      !isAccessToken &&
      c.AUTH_ACCEPT_ID_TOKENS &&
      audiences.length === 1 &&
      (await this.#isClient(audiences[0] as string))
    )
      return { payload, kind: 'id_token' };
    throw new joseErrors.JWTClaimValidationFailed('unexpected "aud" claim value', payload, 'aud', 'check_failed');
  }

  async #isClient(id: string): Promise<boolean> {
    if (!/^[\w-]{1,100}$/.test(id)) return false;
    const row = await this.#db
      .selectFrom('oauth_clients')
      .select('id')
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** The account the token names and its state; an external user's account is created the first time they are seen. */
  async #state(kind: TokenKind, payload: JWTPayload): Promise<TokenState | undefined> {
    if (kind !== 'external') return findTokenState(this.#db, tokenRef(kind, payload));
    const { account } = await ensureExternalAccount(this.#db, {
      issuer: String(payload.iss),
      subject: String(payload.sub),
      email: typeof payload.email === 'string' ? payload.email : undefined,
    });
    return { account, revoked: false };
  }
}

/** What names the state of one of our tokens (not an external provider's) in the database. */
export function tokenRef(kind: TokenKind, payload: JWTPayload): TokenRef {
  return {
    sub: String(payload.sub),
    jti: typeof payload.jti === 'string' ? payload.jti : undefined,
    clientId: tokenClientId(kind, payload),
    grantId: typeof payload.grant_id === 'string' ? payload.grant_id : undefined,
  };
}

/** Longer bearer strings are refused before any parsing. */
const MAX_TOKEN_LENGTH = 8192;

/** Verified access tokens a process remembers (a few MB at most). */
const VERIFIED_TOKENS_KEPT = 5_000;

function safeIssuer(token: string): string | undefined {
  try {
    return decodeJwt(token).iss;
  } catch {
    return undefined;
  }
}

export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}

/**
 * The caller of a request to a service, once its token holds the scope the request needs
 * (`<service>:read` or `<service>:write`); 403 `insufficient_scope` otherwise. An id_token is a
 * bearer on the places routes only.
 */
export async function authorizeBearer(verifier: TokenVerifier, token: string, ctx: RequestScope): Promise<Principal> {
  return authorizePrincipal(await verifier.verify(token), ctx);
}

/** What of a request decides whether a caller may make it. */
type RequestScope = { method: string; state: { service?: string; apiKey?: { clientId: string } } };

/** The caller, once it may make this request (authorizeBearer's checks after the token's). */
export function authorizePrincipal(principal: Principal, ctx: RequestScope): Principal {
  // The x-api-key names the calling application; a token issued to another one is refused with
  // it (an external provider's tokens name no client of ours and are not bound).
  const key = ctx.state.apiKey;
  if (key && principal.kind !== 'external' && principal.clientId !== key.clientId)
    throw unauthorized("The access token was issued to another application than the x-api-key's");
  const service = ctx.state.service;
  if (principal.kind === 'id_token' && service !== 'places')
    throw unauthorized('An id_token is accepted on the places routes only; send an access token');
  if (isScopedService(service)) {
    const scope = requiredScope(service, ctx.method);
    if (!principal.scopes.has(scope)) throw insufficientScope(scope);
  }
  return principal;
}

/** A 403 `insufficient_scope` unless the caller's token holds `scope` (beyond the request's own). */
export function requireScope(principal: Pick<Principal, 'scopes'>, scope: string): void {
  if (!principal.scopes.has(scope)) throw insufficientScope(scope);
}

export function insufficientScope(scope: string): HttpError {
  return new HttpError(403, 'Forbidden', `The token lacks the scope "${scope}" this request needs`, [], {
    'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${scope}"`,
  });
}

/** Requires a valid bearer JWT holding the request's scope; sets ctx.state.principal. */
export function requireBearer(verifier: TokenVerifier): Middleware {
  return async (ctx, next) => {
    const token = bearerToken(ctx.get('authorization'));
    if (!token) throw unauthorized('An Authorization: Bearer <token> header is required');
    ctx.state.principal = await authorizeBearer(verifier, token, ctx);
    await next();
  };
}

/** Requires writes (POST, PUT, PATCH, DELETE) to carry a valid JWT; reads pass without one. */
export function bearerForWrites(verifier: TokenVerifier): Middleware {
  const required = requireBearer(verifier);
  return async (ctx, next) => {
    if (ctx.method === 'GET' || ctx.method === 'HEAD' || ctx.method === 'OPTIONS') return next();
    return required(ctx, next);
  };
}

export function hasRole(principal: Principal | undefined, role: Role): boolean {
  return principal?.roles.includes(role) ?? false;
}
