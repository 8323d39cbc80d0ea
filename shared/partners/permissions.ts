import type { Role } from '../db/schema/accounts.ts';
import { forbiddenError } from '../errors.ts';

/** Who calls a partners use case. */
export interface PartnerCaller {
  accountId: string;
  staff: boolean;
}

export function partnerCallerFrom(account: { accountId: string; roles: readonly Role[] }): PartnerCaller {
  return { accountId: account.accountId, staff: account.roles.includes('staff') };
}

/**
 * Creating, changing and deleting partners is for the operator's staff only (the service is
 * internal; docs/partners.md, "Who may change partners"). Reading is public.
 */
export function assertMayModifyPartners(caller: PartnerCaller): void {
  if (!caller.staff) throw forbiddenError('Only staff accounts may create, change or delete partners');
}
