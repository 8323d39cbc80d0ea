import type { z } from 'zod';
import { type Caller, callerFrom } from '../../shared/places/permissions.ts';
import type { AppContext } from '../context.ts';
import type { ResourceFormat } from '../http/formats/format.ts';
import { Resource } from '../http/resource.ts';
import type { AccessPair, AnyObject, ResourceOptions, Undef } from '../http/resource-spec.ts';
import type { ApiRouter } from '../http/route.ts';

/**
 * The places service's defaults, said once: plain JSON, reads open to anyone (a sent token must
 * be valid: it may show its owner more), writes need a token, and handlers get the places caller.
 */
export type PlacesAccess = { read: 'optional'; write: 'bearer' };
const PLACES_ACCESS: PlacesAccess = { read: 'optional', write: 'bearer' };

export type PlacesResourceOptions<
  CP extends AnyObject | Undef,
  IP extends AnyObject,
  RA extends AccessPair,
  S extends z.ZodType,
> = Omit<ResourceOptions<CP, IP, RA, Caller, unknown, S>, 'format' | 'caller' | 'access'> & {
  format?: ResourceFormat;
  access?: RA;
};

/** A resource of the places service: its handlers get the places `Caller`. */
export function placesServiceResource<
  CP extends AnyObject | Undef,
  IP extends AnyObject,
  S extends z.ZodType,
  RA extends AccessPair = PlacesAccess,
>(
  router: ApiRouter,
  app: AppContext,
  options: PlacesResourceOptions<CP, IP, RA, S>,
): Resource<CP, IP, RA, Caller, unknown, S> {
  return new Resource(router, app, {
    format: 'json',
    ...options,
    // RA defaults to this when the options leave it out.
    access: (options.access ?? PLACES_ACCESS) as RA,
    caller: callerFrom,
  });
}
