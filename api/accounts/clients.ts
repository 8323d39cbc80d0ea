import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import { issueApiKey, listApiKeys, revokeApiKey } from '../../shared/accounts/api-keys.ts';
import {
  authenticateClient,
  type ClientRecord,
  redirectUriProblem,
  registerClient,
} from '../../shared/accounts/clients.ts';
import { TOKEN_ENDPOINT_AUTH_METHODS } from '../../shared/db/schema/accounts.ts';
import type { AppContext } from '../context.ts';
import { bearerToken, hasRole } from '../http/auth.ts';
import { forbidden, HttpError, notFound } from '../http/errors.ts';
import { addOperation } from '../http/operation.ts';
import { ApiRouter, type Security } from '../http/route.ts';

const registration = z
  .object({
    client_name: z.string().trim().min(1, 'required, 1 to 100 characters').max(100, 'at most 100 characters'),
    redirect_uris: z
      .array(z.string().max(2000, 'at most 2000 characters'))
      .min(1, 'give at least one redirect URI')
      .max(20, 'at most 20 redirect URIs'),
    token_endpoint_auth_method: z.enum(TOKEN_ENDPOINT_AUTH_METHODS).optional().meta({
      description:
        '`none` registers a public client: a native or mobile app (RFC 8252) that cannot keep a secret. It sends no secret to `/token` and must use PKCE (S256); it may also redirect to a private-use URI scheme in reverse domain notation (`com.example.fit:/callback`). Its `client_secret` only authenticates the API key calls below: keep it off the device. Default `client_secret_basic`.',
    }),
    first_party: z.boolean().optional().meta({
      description:
        "Staff only (a bearer with the `admin` scope): the service's own application, whose users are not asked to consent. Default false: a third-party application, whose users always see a consent page.",
    }),
  })
  .superRefine((v, ctx) => {
    v.redirect_uris.forEach((uri, i) => {
      const problem = redirectUriProblem(uri, v.token_endpoint_auth_method === 'none');
      if (problem) ctx.addIssue({ code: 'custom', path: ['redirect_uris', i], message: problem });
    });
  });

const registered = z.object({
  client_id: z.string(),
  client_secret: z.string().meta({ description: 'Shown once; stored hashed.' }),
  client_name: z.string(),
  redirect_uris: z.array(z.string()),
  client_id_issued_at: z.number().int(),
  client_secret_expires_at: z.literal(0),
  first_party: z.boolean(),
  token_endpoint_auth_method: z.enum(TOKEN_ENDPOINT_AUTH_METHODS),
});

const apiKey = z.object({
  id: z.string(),
  client_id: z.string(),
  api_key: z.string().meta({ description: 'Shown once; stored hashed.' }),
  prefix: z.string(),
  label: z.string().nullable(),
  created_at: z.string(),
});

const listedKey = apiKey.omit({ api_key: true, client_id: true }).extend({
  last_used_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
});

const clientAuthError = () =>
  new HttpError(401, 'Unauthorized', 'HTTP Basic authentication with the client_id and client_secret is required', [], {
    'WWW-Authenticate': 'Basic realm="clients"',
  });

/** The calling client, authenticated with HTTP Basic (client_id:client_secret), matching the path. */
async function clientFromBasic(app: AppContext, ctx: Context): Promise<ClientRecord> {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(ctx.get('authorization'));
  if (!m?.[1]) throw clientAuthError();
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw clientAuthError();
  let id: string;
  let secret: string;
  try {
    id = decodeURIComponent(decoded.slice(0, colon));
    secret = decodeURIComponent(decoded.slice(colon + 1));
  } catch {
    throw clientAuthError();
  }
  const client = await authenticateClient(app.db, id, secret);
  if (!client) throw clientAuthError();
  // Another client's keys do not exist for this caller.
  if (client.id !== ctx.params.client_id) throw notFound('Client not found');
  return client;
}

declare module 'koa' {
  interface DefaultState {
    /** The client authenticated by HTTP Basic on its own routes. */
    basicClient?: ClientRecord;
  }
}

/** Authenticates the client before its input is validated: without credentials, a 401 and nothing more. */
const requireClientBasic =
  (app: AppContext): Middleware =>
  async (ctx, next) => {
    ctx.state.basicClient = await clientFromBasic(app, ctx);
    await next();
  };

/** The client requireClientBasic authenticated (a route that lists it in its middleware). */
function basicClient(ctx: Context): ClientRecord {
  const client = ctx.state.basicClient;
  if (!client) throw new Error('requireClientBasic is missing from this route');
  return client;
}

/** POST /api/v1/clients and the API keys of a client. */
export function clientsRouter(app: AppContext): ApiRouter {
  const r = new ApiRouter({
    prefix: '/api/v1',
    errorFormat: 'problem',
    registry: app.registry,
    bodyLimitBytes: app.config.bodyLimitBytes,
    tag: 'accounts',
  });
  addOperation(r, app, {
    method: 'post',
    path: '/clients',
    access: 'public',
    status: 201,
    success: { 201: { description: 'Registered', schema: registered } },
    spec: {
      summary: 'Register an OAuth client',
      description:
        'Open to anyone: returns a client id and a secret shown once (stored hashed). The client name cannot be changed. Redirect URIs must use https, or http on a loopback host (any port is then accepted in an authorization request, RFC 8252); a public client (`token_endpoint_auth_method: none`, a native app) may also use a private-use URI scheme. A bearer token, when sent, records the account as the owner. New clients are third-party: each user is asked to allow them, on a consent page naming them and what they ask, and they never hold the `admin` scope. `first_party: true` (no consent page) needs a staff bearer holding `admin`.',
      body: registration,
      errors: {
        403: '`first_party` asked without a staff bearer holding `admin`',
        422: 'Invalid name or redirect URIs',
      },
      handler: async ({ ctx, body }) => {
        const token = bearerToken(ctx.get('authorization'));
        const principal = token ? await app.verifier.verify(token) : undefined;
        if (body.first_party && !hasRole(principal, 'staff'))
          throw forbidden('Only staff (a bearer holding the admin scope) may register a first-party client');
        const client = await registerClient(app.db, {
          client_name: body.client_name,
          redirect_uris: body.redirect_uris,
          ownerAccountId: principal?.accountId,
          firstParty: body.first_party ?? false,
          ...(body.token_endpoint_auth_method ? { tokenEndpointAuthMethod: body.token_endpoint_auth_method } : {}),
        });
        ctx.set('Cache-Control', 'no-store');
        return { ...client, client_secret_expires_at: 0 };
      },
    },
  });
  // A client's own API keys: HTTP Basic with its credentials, checked before any input is read.
  const basic = {
    access: 'public',
    security: ['basic'],
    middleware: [requireClientBasic(app)],
  } satisfies { access: 'public'; security: Security[]; middleware: Middleware[] };
  const basicErrors = { 401: 'Client credentials missing or wrong' } as const;
  const params = z.object({ client_id: z.string().min(1).max(100) });
  addOperation(r, app, {
    ...basic,
    method: 'post',
    path: '/clients/:client_id/api-keys',
    params,
    status: 201,
    success: { 201: { description: 'Issued', schema: apiKey } },
    spec: {
      summary: 'Issue an API key (x-api-key) for a client',
      description: 'Authenticate with HTTP Basic client_id:client_secret. The key is shown once and stored hashed.',
      body: z.object({ label: z.string().trim().max(100, 'at most 100 characters').optional() }).optional(),
      errors: basicErrors,
      handler: async ({ ctx, body }) => {
        const client = basicClient(ctx);
        ctx.set('Cache-Control', 'no-store');
        return issueApiKey(app.db, client.id, body?.label ?? null);
      },
    },
  });
  addOperation(r, app, {
    ...basic,
    method: 'get',
    path: '/clients/:client_id/api-keys',
    params,
    success: { 200: { description: 'Keys', schema: z.object({ api_keys: z.array(listedKey) }) } },
    spec: {
      summary: "List a client's API keys (prefixes only)",
      errors: basicErrors,
      handler: async ({ ctx }) => ({ api_keys: await listApiKeys(app.db, basicClient(ctx).id) }),
    },
  });
  addOperation(r, app, {
    ...basic,
    method: 'delete',
    path: '/clients/:client_id/api-keys/:key_id',
    params: z.object({ client_id: z.string().min(1).max(100), key_id: z.string().min(1).max(100) }),
    notFound: 'No such live key of this client',
    status: 204,
    success: { 204: { description: 'Revoked' } },
    spec: {
      summary: 'Revoke an API key',
      errors: basicErrors,
      handler: async ({ ctx, params: p }) => {
        const client = basicClient(ctx);
        if (!(await revokeApiKey(app.db, client.id, p.key_id))) throw notFound('API key not found or already revoked');
      },
    },
  });
  return r;
}
