import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Client secrets and API keys are 256 random bits, so a fast hash (sha256) is enough to store
 * them: no dictionary or brute force applies (unlike passwords, which use scrypt).
 */
export function newSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}

export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret));
  const b = Buffer.from(storedHash);
  return a.length === b.length && timingSafeEqual(a, b);
}
