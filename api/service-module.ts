import type Router from '@koa/router';
import type { ServiceName } from '../shared/config.ts';
import type { AppContext } from './context.ts';
import { type ErrorFormat, type ErrorFormatOf, errorFormatsByPrefix } from './http/error-format.ts';

/** A service mounts one or more routers; each service folder exports one of these. */
export interface ServiceModule {
  name: ServiceName;
  /** The dialect of its errors under its prefixes, unknown routes and body errors included (default problem). */
  errorFormat?: ErrorFormat;
  /** Path prefixes the service answers under (`/api/v1/places`, `/v2`). */
  prefixes?: string[];
  routers: (ctx: AppContext) => Router[] | Promise<Router[]>;
}

/** The error dialect under each mounted service's prefixes. */
export function serviceErrorFormats(services: readonly ServiceModule[]): ErrorFormatOf {
  return errorFormatsByPrefix(
    services.flatMap((s) => (s.prefixes ?? []).map((prefix) => ({ prefix, format: s.errorFormat ?? 'problem' }))),
  );
}
