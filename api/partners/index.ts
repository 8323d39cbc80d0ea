import { ApiRouter } from '../http/route.ts';
import type { ServiceModule } from '../service-module.ts';
import { partnersResource } from './partners.ts';

/** The community partners service, plain JSON at /api/v1/partners (see docs/partners.md). */
export const partnersService: ServiceModule = {
  name: 'partners',
  errorFormat: 'problem',
  prefixes: ['/api/v1/partners'],
  routers: (app) => {
    const router = new ApiRouter({
      prefix: '/api/v1',
      errorFormat: 'problem',
      registry: app.registry,
      bodyLimitBytes: app.config.bodyLimitBytes,
      tag: 'partners',
    });
    partnersResource(router, app);
    return [router.router];
  },
};
