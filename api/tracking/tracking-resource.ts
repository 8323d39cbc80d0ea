import { z } from 'zod';
import type { TrackingUser } from '../../shared/tracking/users/store.ts';
import type { AppContext } from '../context.ts';
import { addOperation, type OperationDeclaration } from '../http/operation.ts';
import { Resource } from '../http/resource.ts';
import type { AccessPair, AnyObject, ResourceOptions, Undef } from '../http/resource-spec.ts';
import type { ApiRouter, BodySpec } from '../http/route.ts';
import { trackingCallerOf } from './identity.ts';

/**
 * The tracking service's defaults, said once: every resource is Hydra, takes an API key and a
 * token for reads and writes, hands its handlers the tracking user, and names its items by an
 * id of this shape at `/:id` (the router tags them `tracking`). A resource states only what
 * differs from them.
 */

/** The id of a tracking item in its path (activities, goals, hooks...). */
export const idParams = z.object({ id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) });

/** Every tracking call but the share page needs an API key and a token. */
export type TrackingAccess = { read: 'bearer+key'; write: 'bearer+key' };
const TRACKING_ACCESS: TrackingAccess = { read: 'bearer+key', write: 'bearer+key' };

/** A tracking resource's options: a resource's, with the service's defaults optional. */
export type TrackingResourceOptions<
  CP extends AnyObject | Undef,
  IP extends AnyObject,
  RA extends AccessPair,
  Row,
  S extends z.ZodType,
> = Omit<
  ResourceOptions<CP, IP, RA, TrackingUser, Row, S>,
  'format' | 'caller' | 'access' | 'itemPath' | 'itemParams'
> &
  Partial<Pick<ResourceOptions<CP, IP, RA, TrackingUser, Row, S>, 'access' | 'itemPath' | 'itemParams'>>;

/** A tracking resource whose handlers get the tracking user as `caller`. */
export function trackingResource<
  S extends z.ZodType,
  Row = unknown,
  CP extends AnyObject | Undef = AnyObject | Undef,
  IP extends AnyObject = typeof idParams,
  RA extends AccessPair = TrackingAccess,
>(
  router: ApiRouter,
  app: AppContext,
  options: TrackingResourceOptions<CP, IP, RA, Row, S> & { caller?: undefined },
): Resource<CP, IP, RA, TrackingUser, Row, S>;
/** `caller: null`: a resource that reads no user (the referentials), so none is looked up or created. */
export function trackingResource<
  S extends z.ZodType,
  Row = unknown,
  CP extends AnyObject | Undef = AnyObject | Undef,
  IP extends AnyObject = typeof idParams,
  RA extends AccessPair = TrackingAccess,
>(
  router: ApiRouter,
  app: AppContext,
  options: TrackingResourceOptions<CP, IP, RA, Row, S> & { caller: null },
): Resource<CP, IP, RA, undefined, Row, S>;
export function trackingResource<
  S extends z.ZodType,
  Row,
  CP extends AnyObject | Undef,
  IP extends AnyObject,
  RA extends AccessPair,
>(
  router: ApiRouter,
  app: AppContext,
  options: TrackingResourceOptions<CP, IP, RA, Row, S> & { caller?: null },
): Resource<CP, IP, RA, TrackingUser | undefined, Row, S> {
  const { caller, ...rest } = options;
  return new Resource(router, app, {
    format: 'hydra',
    itemPath: '/:id',
    ...rest,
    // IP and RA default to these when the options leave them out.
    itemParams: (options.itemParams ?? idParams) as IP,
    access: (options.access ?? TRACKING_ACCESS) as RA,
    ...(caller === null ? {} : { caller: trackingCallerOf(app) }),
  });
}

/** An operation of no resource (the upload), with the service's access and caller. */
export function trackingOperation<Q extends z.ZodType, P extends z.ZodType, B extends BodySpec, R>(
  router: ApiRouter,
  app: AppContext,
  declaration: Omit<OperationDeclaration<Q, P, B, R, 'bearer+key', TrackingUser>, 'access' | 'caller'>,
): void {
  addOperation(router, app, { ...declaration, access: TRACKING_ACCESS.write, caller: trackingCallerOf(app) });
}
