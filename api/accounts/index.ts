import type { ServiceModule } from '../service-module.ts';
import { accountPagesRouter } from './account-pages.ts';
import { accountsAdminRouter } from './admin.ts';
import { clientsRouter } from './clients.ts';
import { loginPagesRouter } from './login-pages.ts';
import { documentProviderEndpoints } from './oidc-openapi.ts';
import { createProvider, providerRouter } from './provider.ts';
import { trackingRouter } from './tracking.ts';

/**
 * Accounts and login: our OpenID provider (oidc-provider at /authorize, /token, /jwks,
 * /.well-known/openid-configuration), the login and registration pages, the tracking spec's
 * /oauth/authorize, /oauth/accessToken and /api/me, client registration and API keys, the
 * consent page and the user's account page (the applications they allowed), staff account actions.
 */
export const accountsService: ServiceModule = {
  name: 'accounts',
  errorFormat: 'problem',
  prefixes: [
    '/oauth',
    '/api/me',
    '/api/v1/clients',
    '/authorize',
    '/token',
    '/jwks',
    '/.well-known',
    '/interaction',
    '/register',
    '/account',
    '/api/v1/accounts',
  ],
  routers: async (ctx) => {
    const provider = await createProvider(ctx.db, ctx.config, ctx.verifier, ctx.logger);
    documentProviderEndpoints(ctx.registry);
    return [
      providerRouter(provider),
      trackingRouter(ctx, provider),
      loginPagesRouter(ctx, provider),
      accountPagesRouter(ctx, provider),
      clientsRouter(ctx).router,
      accountsAdminRouter(ctx),
    ];
  },
};
