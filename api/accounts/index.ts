import type { ServiceModule } from '../services.ts';
import { clientsRouter } from './clients.ts';
import { pagesRouter } from './pages.ts';
import { createProvider, providerRouter } from './provider.ts';
import { trackingRouter } from './tracking.ts';

/**
 * Accounts and login: our OpenID provider (oidc-provider at /authorize, /token, /jwks,
 * /.well-known/openid-configuration), the login and registration pages, the tracking spec's
 * /oauth/authorize, /oauth/accessToken and /api/me, client registration and API keys.
 */
export const accountsService: ServiceModule = {
  name: 'accounts',
  routers: async (ctx) => {
    const provider = await createProvider(ctx.db, ctx.config, ctx.logger);
    return [
      providerRouter(provider),
      trackingRouter(ctx, provider),
      pagesRouter(ctx, provider),
      clientsRouter(ctx).router,
    ];
  },
};
