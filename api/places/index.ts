import type { ServiceModule } from '../service-module.ts';
import { activitiesResource, placeTagsResource } from './activities.ts';
import { placesRouter } from './common.ts';
import { placesResource } from './places.ts';
import { placeSportsResource } from './sports.ts';

/** The places service, mounted at /api/v1 (see docs/places.md). */
export const placesService: ServiceModule = {
  name: 'places',
  errorFormat: 'problem',
  prefixes: ['/api/v1/places', '/api/v1/sports'],
  routers: (app) => {
    const router = placesRouter(app);
    placesResource(router, app);
    activitiesResource(router, app);
    placeTagsResource(router, app);
    placeSportsResource(router, app);
    return [router.router];
  },
};
