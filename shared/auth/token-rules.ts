import type { JWTPayload } from 'jose';
import type { TokenState } from '../accounts/token-accounts.ts';
import type { Role } from '../db/schema/accounts.ts';
import { ADMIN_SCOPE, API_SCOPES, knownScopes, OIDC_SCOPES } from './scopes.ts';

/**
 * The kinds of bearer we accept: our access tokens, id_tokens of our clients (the places
 * service's implicit login, on the places routes only) and an external provider's tokens.
 */
export type TokenKind = 'access' | 'id_token' | 'external';

const ID_TOKEN_SCOPES = ['places:read', 'places:write'];

/** The client a token of ours was issued to: `client_id` (access tokens) or the id_token's audience. */
export function tokenClientId(kind: TokenKind, claims: JWTPayload): string | undefined {
  if (kind === 'external') return undefined;
  if (kind === 'id_token') return typeof claims.aud === 'string' ? claims.aud : claims.aud?.[0];
  return typeof claims.client_id === 'string' ? claims.client_id : undefined;
}

/**
 * Why a verified token no longer holds, or undefined when it does: the account is disabled, its
 * sessions were ended after the token was issued (token version), the token or its grant was
 * revoked, its client is gone, or the user withdrew a third-party client's access (consent revoked, or given
 * again after the token was issued).
 */
export function tokenRefusal(kind: TokenKind, claims: JWTPayload, state: TokenState): string | undefined {
  if (state.account.disabled_at) return 'The account is disabled';
  if (kind === 'external') return undefined;
  if (claims.ver !== state.account.token_version)
    return "The token was issued before the account's sessions were ended (password or roles changed, or signed out everywhere); sign in again";
  if (state.revoked) return 'The token has been revoked';
  if (state.grantRevoked)
    return 'The sign-in this token came from was revoked (its refresh token was revoked or used twice, or the user signed out); sign in again';
  const clientId = tokenClientId(kind, claims);
  if (!clientId) return 'The token names no application (client_id)';
  if (!state.client) return 'The application this token was issued to is no longer registered';
  if (state.client.firstParty) return undefined;
  const issuedAt = typeof claims.iat === 'number' ? claims.iat : 0;
  if (!state.consent || issuedAt < Math.floor(state.consent.grantedAt.getTime() / 1000))
    return "The user withdrew this application's access; sign in again";
  return undefined;
}

/**
 * The API scopes a token holds: those it carries and its client was granted. An id_token holds
 * the places scopes (all of them for a first-party client, those the user allowed otherwise);
 * an external provider's token holds every scope but `admin` unless it carries it (the operator
 * chose to trust that provider). Third-party clients never hold `admin`.
 */
export function tokenScopes(kind: TokenKind, claims: JWTPayload, state: TokenState): Set<string> {
  if (kind === 'external') {
    const carried = knownScopes(claims.scope, API_SCOPES);
    return new Set(carried.length ? carried : API_SCOPES.filter((s) => s !== ADMIN_SCOPE));
  }
  const firstParty = state.client?.firstParty ?? false;
  const consented = new Set(state.consent?.scopes ?? []);
  const carried =
    kind === 'id_token'
      ? firstParty
        ? [...ID_TOKEN_SCOPES, ADMIN_SCOPE]
        : ID_TOKEN_SCOPES
      : knownScopes(claims.scope, API_SCOPES);
  return new Set(carried.filter((s) => firstParty || (s !== ADMIN_SCOPE && consented.has(s))));
}

/**
 * The OpenID Connect scopes (profile, email) the user allowed the token's client: all of them for
 * a first-party client and an external provider, the consented ones otherwise.
 */
export function tokenOidcScopes(kind: TokenKind, state: TokenState): Set<string> {
  if (kind === 'external' || state.client?.firstParty) return new Set(OIDC_SCOPES);
  return new Set((state.consent?.scopes ?? []).filter((s) => OIDC_SCOPES.includes(s)));
}

/** The roles a request acts with: staff powers need the `admin` scope. */
export function effectiveRoles(roles: readonly Role[], scopes: ReadonlySet<string>): Role[] {
  return roles.filter((r) => r !== 'staff' || scopes.has(ADMIN_SCOPE));
}
