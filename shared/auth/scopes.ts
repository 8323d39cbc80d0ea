/**
 * The scopes of our APIs: read and write per service, and `admin` for staff actions. A token
 * carries the scopes its client was granted; each service checks the one a request needs
 * (reads: `<service>:read`, writes: `<service>:write`). See docs/accounts.md.
 */
export const SCOPED_SERVICES = ['places', 'catalogue', 'partners', 'tracking'] as const;
export type ScopedService = (typeof SCOPED_SERVICES)[number];

/** Staff powers (moderation, first-party clients, disabling accounts): never for third-party clients. */
export const ADMIN_SCOPE = 'admin';

/**
 * What reaches beyond a service's data to the account itself: the export of all personal data
 * (email, names and the applications allowed among it) and scheduling the account's deletion.
 * `tracking:*` alone does not (docs/accounts.md "Scopes").
 */
export const ACCOUNT_SCOPE = 'account';

export const API_SCOPES: readonly string[] = [
  ...SCOPED_SERVICES.flatMap((s) => [`${s}:read`, `${s}:write`]),
  ACCOUNT_SCOPE,
  ADMIN_SCOPE,
];

/** The OpenID Connect scopes the provider knows. */
export const OIDC_SCOPES: readonly string[] = ['openid', 'profile', 'email'];

/** Asks for a refresh token (OpenID Connect Core §11): the application stays signed in. */
export const OFFLINE_ACCESS_SCOPE = 'offline_access';

/** The scopes oidc-provider itself grants (the API scopes belong to the API resource). */
export const PROVIDER_SCOPES: readonly string[] = [...OIDC_SCOPES, OFFLINE_ACCESS_SCOPE];

/** What each scope lets an application do, as the consent page says it. */
export const SCOPE_DESCRIPTIONS: Record<string, string> = {
  openid: 'Know who you are when you sign in',
  profile: 'See your name, gender, birth date, language and picture',
  email: 'See your email address',
  offline_access: 'Stay signed in: keep this access while you are away, until you withdraw it on your account page',
  'places:read': 'See the places you submitted, including those awaiting moderation',
  'places:write': 'Add, change and delete places and their pictures in your name',
  'catalogue:read': 'Read the sports catalogue as you',
  'catalogue:write': 'Change the sports catalogue in your name',
  'partners:read': 'Read the community partners as you',
  'partners:write': 'Create, change and delete community partners with your staff powers',
  'tracking:read': 'See your activities, GPS tracks, records, devices, measures and shares',
  'tracking:write': 'Add, change and delete your activities, devices, measures and shares',
  account:
    'Export all your personal data (your email, names and the applications you allowed among it) and schedule the deletion of your account',
  admin: 'Act with your staff powers (moderation, administration)',
};

/** The scope a request to a service needs: reads need `:read`, everything else `:write`. */
export function requiredScope(service: ScopedService, method: string): string {
  const read = method === 'GET' || method === 'HEAD' || method === 'OPTIONS';
  return `${service}:${read ? 'read' : 'write'}`;
}

export function isScopedService(name: string | undefined): name is ScopedService {
  return (SCOPED_SERVICES as readonly string[]).includes(name ?? '');
}

/** The scopes of a space-separated list that we know, in order, without duplicates. */
export function knownScopes(
  scope: unknown,
  allowed: readonly string[] = [...PROVIDER_SCOPES, ...API_SCOPES],
): string[] {
  if (typeof scope !== 'string') return [];
  return [...new Set(scope.split(' ').filter((s) => allowed.includes(s)))];
}

/** The API scopes a client may hold: third-party clients never get `admin`. */
export function grantableApiScopes(firstParty: boolean): string[] {
  return API_SCOPES.filter((s) => firstParty || s !== ADMIN_SCOPE);
}
