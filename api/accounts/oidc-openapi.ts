import { z } from 'zod';
import type { OpenApiRegistry } from '../http/openapi.ts';
import { PROVIDER_ROUTES } from './provider.ts';

/**
 * The OpenID provider's own endpoints in /openapi.json. oidc-provider serves them (api/accounts/
 * provider.ts), so they are described here rather than declared: a generated client and a reader
 * of /docs find the login beside the APIs it opens, PKCE and `nonce` included.
 */

const oauthError = z
  .object({ error: z.string(), error_description: z.string().optional() })
  .meta({ id: 'OAuthError', description: 'RFC 6749, 5.2' });

const tokenAnswer = z
  .object({
    access_token: z.string(),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int(),
    scope: z.string(),
    id_token: z.string().optional(),
    refresh_token: z
      .string()
      .optional()
      .meta({ description: 'With offline_access: works once; each refresh answers the next one' }),
  })
  .meta({
    id: 'TokenResponse',
    example: {
      access_token: 'eyJhbGciOiJFUzI1NiIsInR5cCI6ImF0K2p3dCJ9…',
      token_type: 'Bearer',
      expires_in: 900,
      scope: 'openid profile email tracking:read tracking:write',
      id_token: 'eyJhbGciOiJFUzI1NiJ9…',
    },
  });

const authorizeQuery = z.object({
  response_type: z.enum(['code', 'id_token', 'id_token token']).meta({
    description: '`code` (with PKCE; recommended), or the places spec’s implicit `id_token` / `id_token token`',
  }),
  audience: z.string().optional().meta({
    description: 'sent by the places spec’s clients; accepted and ignored (access tokens are for AUTH_AUDIENCE)',
  }),
  client_id: z.string(),
  redirect_uri: z.string().meta({ format: 'uri', example: 'com.example.fit:/callback' }),
  scope: z.string().meta({
    example: 'openid profile tracking:read tracking:write',
    description: 'add `offline_access` for a refresh token (code flow; `prompt=consent` is implied)',
  }),
  state: z.string().optional().meta({ description: 'echoed back to the redirect URI (CSRF)' }),
  nonce: z.string().optional().meta({ description: 'echoed in the id_token (replay protection)' }),
  code_challenge: z
    .string()
    .optional()
    .meta({ description: 'PKCE (RFC 7636): BASE64URL(SHA-256(code_verifier)); required of public clients' }),
  code_challenge_method: z.literal('S256').optional(),
  prompt: z.enum(['none', 'login', 'consent']).optional(),
});

const tokenForm = z
  .object({
    grant_type: z.enum(['authorization_code', 'refresh_token', 'client_credentials']),
    code: z.string().optional(),
    refresh_token: z
      .string()
      .optional()
      .meta({ description: 'grant_type=refresh_token: used up by the call; presented again, the sign-in is revoked' }),
    redirect_uri: z.string().optional(),
    code_verifier: z.string().optional().meta({ description: 'PKCE: the secret behind code_challenge' }),
    client_id: z.string().optional().meta({ description: 'public clients (no secret) name themselves here' }),
    scope: z.string().optional(),
  })
  .meta({ description: 'A confidential client authenticates with HTTP Basic (client id and secret).' });

const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });

export function documentProviderEndpoints(registry: OpenApiRegistry): void {
  const tags = ['accounts'];
  registry.add(PROVIDER_ROUTES.authorization, 'get', {
    operationId: 'authorize',
    summary: 'Start a login (OAuth 2.0 authorization code with PKCE, OpenID Connect)',
    description:
      'Opens the login and consent pages in a browser, then redirects to `redirect_uri` with `code` and `state` (or `error`). Public clients (native apps) must send `code_challenge` with `code_challenge_method=S256`. See docs/accounts.md.',
    tags,
    requestParams: { query: authorizeQuery },
    responses: {
      302: { description: 'To the login page, or back to redirect_uri with a code or an error' },
      400: {
        description: 'Unknown client or redirect URI (shown, never redirected)',
        content: { 'text/html': { schema: z.string().meta({ description: 'A page saying what was wrong' }) } },
      },
    },
  });
  registry.add(PROVIDER_ROUTES.token, 'post', {
    operationId: 'token',
    summary: 'Exchange an authorization code or a refresh token for tokens',
    tags,
    security: [{ basic: [] }, {}],
    requestBody: { required: true, content: { 'application/x-www-form-urlencoded': { schema: tokenForm } } },
    responses: {
      200: { description: 'The tokens', ...json(tokenAnswer) },
      400: { description: 'invalid_grant, invalid_request…', ...json(oauthError) },
      401: { description: 'invalid_client', ...json(oauthError) },
    },
  });
  registry.add(PROVIDER_ROUTES.revocation, 'post', {
    operationId: 'revokeToken',
    summary: 'Revoke an access or refresh token (RFC 7009): every service refuses it at once',
    description:
      'A refresh token is revoked with its sign-in (grant): every refresh and access token issued from it ends. An access token is revoked alone.',
    tags,
    security: [{ basic: [] }, {}],
    requestBody: {
      required: true,
      content: {
        'application/x-www-form-urlencoded': {
          schema: z.object({
            token: z.string(),
            token_type_hint: z.enum(['access_token', 'refresh_token']).optional(),
          }),
        },
      },
    },
    responses: {
      200: { description: 'Revoked (or unknown: RFC 7009 answers the same)' },
      400: { description: 'invalid_request, unsupported_token_type', ...json(oauthError) },
      401: { description: 'invalid_client', ...json(oauthError) },
    },
  });
  registry.add(PROVIDER_ROUTES.jwks, 'get', {
    operationId: 'jwks',
    summary: 'The public keys that verify our tokens (JWK Set)',
    tags,
    responses: { 200: { description: 'RFC 7517 JWK Set', ...json(z.object({ keys: z.array(z.looseObject({})) })) } },
  });
  registry.add('/.well-known/openid-configuration', 'get', {
    operationId: 'openidConfiguration',
    summary: 'OpenID Connect discovery: the endpoints, scopes and algorithms of the login',
    tags,
    responses: { 200: { description: 'OpenID Provider Metadata', ...json(z.looseObject({ issuer: z.string() })) } },
  });
}
