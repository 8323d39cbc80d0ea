/** How long refresh tokens live (REFRESH_TOKEN_ABSOLUTE_TTL_S, REFRESH_TOKEN_IDLE_TTL_S). */
export interface RefreshTokenLimits {
  absoluteS: number;
  idleS: number;
}

/**
 * Seconds a new refresh token lives: the idle window, cut at the end of its family (the tokens
 * rotated from one sign-in), which comes `absoluteS` after the family's first token was issued.
 * Times are epoch seconds. Never below 1 (a rotated token was still valid, so its family has time
 * left; oidc-provider wants a positive lifetime).
 */
export function refreshTokenTtl(familyIssuedAt: number, now: number, limits: RefreshTokenLimits): number {
  const familyLeft = familyIssuedAt + limits.absoluteS - now;
  return Math.max(1, Math.min(limits.idleS, familyLeft));
}
