import { z } from 'zod';

/**
 * Schemas of the tracking spec's account routes. The OAuth routes answer OAuth errors (or an
 * HTML page) themselves, so their query schemas never refuse a request: a parameter sent twice
 * counts as absent (`catch`), and `param.required` documents what the spec requires.
 */
const oauthParam = (description: string, required = true) =>
  z
    .string()
    .optional()
    .catch(undefined)
    .meta({ param: { description, ...(required ? { required: true } : {}) } });

export const authorizeQuery = z.object({
  response_type: oauthParam('`code`'),
  client_id: oauthParam('Your client id (POST /api/v1/clients).'),
  redirect_uri: oauthParam('One of the client’s registered redirect URIs; the code comes back there as `?code=`.'),
  scope: oauthParam(
    'Default `openid profile email tracking:read tracking:write`. Add `offline_access` to stay signed in: `/oauth/accessToken` then also gives a `refresh_token`.',
    false,
  ),
  state: oauthParam('Echoed back with the code (recommended, against CSRF).', false),
  code_challenge: oauthParam(
    'PKCE (RFC 7636): BASE64URL(SHA-256(code_verifier)); required of public clients (native apps), which then exchange the code at `POST /token` with `code_verifier`.',
    false,
  ),
  code_challenge_method: oauthParam('`S256` (the only method accepted), with `code_challenge`.', false),
  nonce: oauthParam('Echoed in the id_token (replay protection).', false),
});

export const accessTokenQuery = z.object({
  client_id: oauthParam('Your client id.'),
  client_secret: oauthParam('Your client secret.'),
  redirect_uri: oauthParam('The redirect_uri the code was sent to (with `authorization_code`).', false),
  code: oauthParam('The code from the redirect; it works once (with `authorization_code`).', false),
  grant_type: oauthParam('`authorization_code`, or `refresh_token` to stay signed in'),
  refresh_token: oauthParam(
    'The refresh token of the previous answer (with `refresh_token`); it works once, and a new one comes back.',
    false,
  ),
});

export const accessTokenResponse = z.object({
  access_token: z.string().meta({ description: 'A JWT bearer (typ at+jwt), valid 15 minutes.' }),
  refresh_token: z.string().optional().meta({
    description:
      'When `offline_access` was allowed: exchange it (`grant_type=refresh_token`) for a new access token before this one expires. It works once; the answer carries the next one.',
  }),
});

/** RFC 6749 §5.2 error response. */
export const oauthError = z.object({
  error: z.string().meta({ example: 'invalid_grant' }),
  error_description: z.string().optional(),
});

export const meQuery = z.object({
  access_token: z
    .string('send access_token once')
    .optional()
    .meta({ description: 'An access token; or send it as `Authorization: Bearer <token>`.' }),
});

export const meResponse = z.object({
  email: z.string().nullable(),
  firstName: z.string(),
  lastName: z.string(),
  gender: z.number().int().nullable().meta({ description: '1 male, 2 female, 3 other' }),
  birthdate: z.number().int().nullable().meta({ description: 'epoch milliseconds' }),
  created: z.number().int().meta({ description: 'epoch milliseconds' }),
  country: z.string().nullable(),
  language: z.string().nullable(),
  imageUrl: z.string().nullable(),
  roles: z.array(z.string()).meta({ example: ['ROLE_USER'] }),
  ldid: z.string().meta({ description: 'The user identifier of the tracking service.' }),
  requestKey: z.string().meta({ description: 'The tracking bearer: a JWT valid 15 minutes.' }),
});
