import { ensureTrackingUser, type TrackingUser } from '../../shared/tracking/users/store.ts';
import type { AppContext } from '../context.ts';
import type { CallerResolver } from '../http/resource.ts';

/**
 * The tracking service's caller: the tracking user of the verified principal, created on their
 * first call. Tracking resources declare it (`caller`), so their handlers get the user.
 */
export function trackingCallerOf(app: Pick<AppContext, 'db'>): CallerResolver<TrackingUser> {
  // `bearer+key` read the user with the credentials (api/http/key-and-bearer.ts): no query here.
  return (principal) =>
    principal.trackingUser ??
    ensureTrackingUser(app.db, { accountId: principal.accountId, ldid: principal.ldid, claims: principal.claims });
}
