import type { ServiceModule } from '../services.ts';
import { ApiRouter } from '../http/route.ts';
import { addActivityRoutes } from './activities.ts';
import { addPlaceRoutes } from './places.ts';
import { addSearchRoutes } from './search.ts';
import { addSportRoutes } from './sports.ts';

/** The places service (specs/places-service.md), mounted at /api/v1; see docs/places.md. */
export const placesService: ServiceModule = {
  name: 'places',
  routers: (app) => {
    const router = new ApiRouter({ prefix: '/api/v1', errorFormat: 'problem', registry: app.registry, tag: 'places' });
    addSearchRoutes(router, app);
    addPlaceRoutes(router, app);
    addActivityRoutes(router, app);
    addSportRoutes(router, app);
    return [router.router];
  },
};
