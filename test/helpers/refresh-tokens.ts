import * as oidc from 'openid-client';
import type { TestApi } from './app.ts';
import { PASSWORD } from './oauth-user-agent.ts';
import { authorizationRedirect } from './tokens.ts';

/** Shared by the test/accounts-refresh-*.test.ts files: logging in with openid-client (not a test file itself). */

/** openid-client's view of the provider for one client: confidential (HTTP Basic) or public (no secret). */
export function discover(api: Pick<TestApi, 'url'>, clientId: string, secret?: string): Promise<oidc.Configuration> {
  return oidc.discovery(
    new URL(api.url),
    clientId,
    undefined,
    secret === undefined ? oidc.None() : oidc.ClientSecretBasic(secret),
    { execute: [oidc.allowInsecureRequests] },
  );
}

/**
 * Signs the user in as a browser would (answering a consent page with Allow) and exchanges the
 * code with openid-client (PKCE, state and the id_token checked).
 */
export async function logIn(
  api: Pick<TestApi, 'url'>,
  config: oidc.Configuration,
  opts: { email: string; redirectUri: string; scope: string; extra?: Record<string, string> },
) {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: opts.redirectUri,
    scope: opts.scope,
    state,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...opts.extra,
  });
  const location = await authorizationRedirect(api.url, url.href, {
    redirectUri: opts.redirectUri,
    email: opts.email,
    password: PASSWORD,
  });
  return oidc.authorizationCodeGrant(config, new URL(location), { pkceCodeVerifier: verifier, expectedState: state });
}

/** The OAuth error code openid-client saw (`invalid_grant`...), or the error's message. */
export async function oauthErrorOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as { error?: string; message?: string }).error ?? String((error as Error).message);
  }
  return 'no error';
}
