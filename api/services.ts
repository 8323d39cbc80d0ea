import type Router from '@koa/router';
import type { ServiceName } from '../shared/config.ts';
import type { AppContext } from './context.ts';
import { placesService } from './places/index.ts';
import { accountsService } from './accounts/index.ts';
import { placesPicturesService } from './places/pictures.ts';

/** A service mounts one or more routers; each service folder exports one of these. */
export interface ServiceModule {
  name: ServiceName;
  routers: (ctx: AppContext) => Router[] | Promise<Router[]>;
}

/** Every service this build ships; the API mounts those named in SERVICES. */
export const SERVICES: ServiceModule[] = [
  placesService,
  placesPicturesService,
  accountsService,
];
