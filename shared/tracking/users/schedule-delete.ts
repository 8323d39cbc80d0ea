/**
 * The rule of a user's `scheduleDelete` (docs/accounts-lifecycle.md): the date their account is
 * deleted, at least the grace period (ACCOUNT_DELETE_GRACE_S) after the request, so a mistake or
 * a stolen token can still be undone; null cancels. The purge deletes the account once the date
 * has come (shared/accounts/account-purge.ts).
 */

/** A client's clock may lag the server's: a date up to this much before the earliest is still taken. */
export const SCHEDULE_DELETE_SLACK_S = 300;

/** The earliest `scheduleDelete` a request made at `now` may name. */
export function earliestScheduleDelete(now: Date, graceSeconds: number): Date {
  return new Date(now.getTime() + (graceSeconds - SCHEDULE_DELETE_SLACK_S) * 1000);
}

/** "7 days", "36 hours", "90 minutes", "45 seconds": the grace period in words. */
export function graceInWords(seconds: number): string {
  const units: [number, string][] = [
    [86_400, 'day'],
    [3600, 'hour'],
    [60, 'minute'],
  ];
  for (const [size, name] of units)
    if (seconds >= size && seconds % size === 0) return `${seconds / size} ${name}${seconds === size ? '' : 's'}`;
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
}

/** Why `date` cannot be the deletion date asked at `now`, or undefined when it can. */
export function scheduleDeleteProblem(date: Date, now: Date, graceSeconds: number): string | undefined {
  if (date >= earliestScheduleDelete(now, graceSeconds)) return undefined;
  const earliest = new Date(now.getTime() + graceSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');
  return graceSeconds === 0
    ? 'must not be in the past (null cancels the deletion)'
    : `must be at least ${graceInWords(graceSeconds)} from now (the grace period), ${earliest} or later; null cancels the deletion`;
}

/** The rule in words, for the API's documentation. */
export function scheduleDeleteRule(graceSeconds: number): string {
  const when =
    graceSeconds === 0
      ? 'any date-time from now on (this deployment has no grace period)'
      : `a date-time at least ${graceInWords(graceSeconds)} from now (ACCOUNT_DELETE_GRACE_S, the grace period; 422 otherwise)`;
  return `\`scheduleDelete\` asks for the deletion of the account and everything of it: ${when}. Until that date everything works as usual and \`null\` cancels; then the account, its activities, measures, records, devices, shares, photos, exports and tokens are deleted for good (docs/accounts-lifecycle.md).`;
}
