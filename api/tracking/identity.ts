import { ensureTrackingUser, type TrackingUser } from '../../shared/tracking/users.ts';
import type { AppContext } from '../context.ts';
import type { Principal } from '../http/auth.ts';
import { unauthorized } from '../http/errors.ts';

/**
 * The tracking user making the call (every tracking operation but the share page has access
 * `bearer+key`, so a principal is there); created on their first call.
 */
export function trackingCaller(app: Pick<AppContext, 'db'>, principal: Principal | undefined): Promise<TrackingUser> {
  if (!principal) throw unauthorized();
  return ensureTrackingUser(app.db, { accountId: principal.accountId, ldid: principal.ldid, claims: principal.claims });
}
