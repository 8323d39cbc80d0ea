import type { Role } from '../db/schema/accounts.ts';
import { forbiddenError } from '../errors.ts';
import type { Viewer } from './activities.ts';

/** Who calls a places use case: their account and the roles that widen what they may do. */
export interface Caller extends Viewer {
  partner: boolean;
}

export function callerFrom(account: { accountId: string; roles: readonly Role[] }): Caller {
  return {
    accountId: account.accountId,
    staff: account.roles.includes('staff'),
    partner: account.roles.includes('partner'),
  };
}

/** Fields only partner accounts may change (on any place they can see). */
export const PARTNER_FIELDS: readonly string[] = ['featured', 'partner'];

/**
 * May the caller change these fields of a place? Partner fields need a partner account (the
 * creator included); every other field needs the creator or staff.
 */
export function assertMayUpdatePlace(caller: Caller, createdBy: string | null, fields: readonly string[]): void {
  if (fields.some((k) => PARTNER_FIELDS.includes(k)) && !caller.partner)
    throw forbiddenError('Only partner accounts may change featured or partner');
  const owner = caller.staff || createdBy === caller.accountId;
  if (fields.some((k) => !PARTNER_FIELDS.includes(k)) && !owner)
    throw forbiddenError('Only the creator of the place or staff may change these fields');
}

export function assertMayDeletePlace(caller: Caller, createdBy: string | null): void {
  if (createdBy !== caller.accountId) throw forbiddenError('Only the creator of a place may delete it');
}

export function assertStaff(caller: Caller): void {
  if (!caller.staff) throw forbiddenError('Only staff accounts may do this');
}

/** The creator of the activity, the creator of its place, and staff may delete an activity. */
export function assertMayDeleteActivity(
  caller: Caller,
  activity: { created_by: string | null; place_created_by: string | null },
): void {
  if (!caller.staff && activity.created_by !== caller.accountId && activity.place_created_by !== caller.accountId)
    throw forbiddenError('Only the creator of the activity or of the place, or staff, may delete it');
}
