import { accountsService } from './accounts/index.ts';
import { catalogueService } from './catalogue/index.ts';
import { partnersService } from './partners/index.ts';
import { placesService } from './places/index.ts';
import { placesPicturesService } from './places/pictures.ts';
import type { ServiceModule } from './service-module.ts';
import { trackingService } from './tracking/index.ts';

/** Every service this build ships; the API mounts those named in SERVICES. */
export const SERVICES: ServiceModule[] = [
  placesService,
  placesPicturesService,
  accountsService,
  catalogueService,
  partnersService,
  trackingService,
];
