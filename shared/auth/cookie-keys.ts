import { deflateRawSync } from 'node:zlib';

/**
 * Which COOKIE_KEYS a production server may sign its cookies with (docs/operations.md "Cookie
 * keys"). A key anyone can read (a default or an example printed in this repository), a short
 * one or one with few distinct characters lets anyone sign a cookie; the sign-in cookies hold
 * only a random session id (api/accounts/account-session.ts), but the login's own cookies
 * (oidc-provider's interactions) are signed with the same keys.
 */

/** Every value of COOKIE_KEYS printed in this repository (test/cookie-keys.test.ts keeps the list whole). */
export const PUBLISHED_COOKIE_KEYS: readonly string[] = [
  'dev-only-cookie-key-change-me',
  'change-me-to-a-long-random-secret',
];

export const MIN_COOKIE_KEY_LENGTH = 32;
/** By estimatedKeyBits: a key of `openssl rand -base64 48` is far above it. */
export const MIN_COOKIE_KEY_BITS = 128;
export const MAKE_A_KEY = 'make one with `openssl rand -base64 48`';

/**
 * A cheap upper bound on what a guesser faces: the smaller of the key's length times the Shannon
 * entropy of its characters (few distinct characters) and the bits of its deflated form (repeated
 * runs, such as a word or a count written again and again).
 */
export function estimatedKeyBits(key: string): number {
  const counts = new Map<string, number>();
  for (const c of key) counts.set(c, (counts.get(c) ?? 0) + 1);
  const n = [...key].length;
  let perChar = 0;
  for (const count of counts.values()) perChar -= (count / n) * Math.log2(count / n);
  return Math.min(perChar * n, 8 * deflateRawSync(key, { level: 9 }).length);
}

/** Why these keys (comma-separated, the first signs) must not sign production cookies, or undefined. */
export function cookieKeysProblem(keys: string): string | undefined {
  const list = keys.split(',').map((k) => k.trim());
  for (const [i, key] of list.entries()) {
    const which = list.length > 1 ? `key ${i + 1} of ${list.length}` : 'the key';
    if (PUBLISHED_COOKIE_KEYS.includes(key)) return `${which} is published (a default or an example): ${MAKE_A_KEY}`;
    if (key.length < MIN_COOKIE_KEY_LENGTH)
      return `${which} is shorter than ${MIN_COOKIE_KEY_LENGTH} characters: ${MAKE_A_KEY}`;
    if (estimatedKeyBits(key) < MIN_COOKIE_KEY_BITS)
      return `${which} is too predictable (few distinct characters, or repeated runs): ${MAKE_A_KEY}`;
  }
  return undefined;
}
