import { decodeJwt, decodeProtectedHeader, errors as joseErrors } from 'jose';

/** What the verifier expected of the token that failed: shown so the developer can fix the mismatch. */
export interface TokenExpectations {
  issuer: string;
  audience: string;
  algorithms: readonly string[];
}

/** Claims echoed in a message are the caller's own token's, cut short so a message stays a message. */
const shown = (value: unknown) => JSON.stringify(String(value).slice(0, 200));

function unverifiedClaims(token: string): { iss?: unknown; alg?: unknown } {
  try {
    return { iss: decodeJwt(token).iss, alg: decodeProtectedHeader(token).alg };
  } catch {
    return {};
  }
}

/**
 * Why a bearer token failed verification, naming the claim or header that failed (RFC 6750 lets
 * the error description say so). A token minted for another issuer is the common case behind a
 * bare "invalid": a CLI run with another PUBLIC_URL than the server's, or another deployment's
 * token. It is named before the signature is blamed, since another deployment signs with other keys.
 */
export function tokenFailure(error: unknown, token: string, expected: TokenExpectations): string {
  const { iss, alg } = unverifiedClaims(token);
  // Named first: a new token from the same place would fail again, expired or not.
  if (iss !== undefined && iss !== expected.issuer)
    return `The access token was issued by ${shown(iss)}, but this server only accepts tokens of the issuer ${shown(expected.issuer)} (the "iss" claim; the server that minted it runs with another PUBLIC_URL or AUTH_ISSUER)`;
  if (error instanceof joseErrors.JWTExpired)
    return 'The access token has expired (its "exp" claim is in the past): get a new one';
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.reason === 'missing') return `The access token lacks the "${error.claim}" claim`;
    if (error.claim === 'iss')
      return `The access token has no "iss" claim of this server's issuer ${shown(expected.issuer)}`;
    if (error.claim === 'aud')
      return `The access token's audience (the "aud" claim) is not ${shown(expected.audience)}, and it is no id_token of a registered client: send an access token of this server (header typ "at+jwt")`;
    if (error.claim === 'nbf' || error.claim === 'iat')
      return `The access token is not valid yet (its "${error.claim}" claim is in the future): check the clocks`;
    return `The access token's "${error.claim}" claim is invalid`;
  }
  if (error instanceof joseErrors.JOSEAlgNotAllowed)
    return `The access token is signed with ${shown(alg)}; accepted: ${expected.algorithms.join(', ')}`;
  if (error instanceof joseErrors.JWKSNoMatchingKey)
    return 'The access token is signed with a key this server does not publish (its "kid" header names no key of the issuer\'s JWKS)';
  if (error instanceof joseErrors.JWSSignatureVerificationFailed)
    return "The access token's signature does not verify (the token was altered, or signed with another key)";
  if (error instanceof joseErrors.JWTInvalid || error instanceof joseErrors.JWSInvalid)
    return 'The access token is not a well-formed signed JWT';
  return 'The access token is invalid';
}
