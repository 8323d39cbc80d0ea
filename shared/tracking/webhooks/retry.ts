/**
 * When a failed delivery is tried again (docs/webhooks.md, "Retries"): exponential backoff with
 * jitter, a random factor from 0.75 to 1.25 on every wait (receivers that failed together are
 * not all tried again together). With the default base (20 s) the first retry comes within 25 s
 * and the waits add up to about a day by the 9th try: 20 s, 80 s, 5 min, 21 min, 85 min, 5.7 h,
 * then 8 h at most.
 */

export const MAX_RETRY_DELAY_MS = 8 * 3600 * 1000;

const jitter = (ms: number, random: () => number) => Math.round(ms * (0.75 + random() * 0.5));

/** A delivery's wait after its `attempts`-th failed attempt: base × 4^(attempts−1). */
export function retryDelayMs(attempts: number, baseMs: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, Math.min(attempts - 1, 30));
  return jitter(Math.min(baseMs * 4 ** exponent, MAX_RETRY_DELAY_MS), random);
}

/**
 * A failing hook's wait before it is tried again: three times as long as it has been failing
 * (at least the base), so the total failing time grows fourfold with each try, as a delivery's
 * does. Measured in time, not in failed attempts: a burst of deliveries failing at once (a
 * receiver going down under load) does not push the next try hours away.
 */
export function hookRetryDelayMs(failingForMs: number, baseMs: number, random: () => number = Math.random): number {
  return jitter(Math.min(Math.max(baseMs, 3 * failingForMs), MAX_RETRY_DELAY_MS), random);
}
