import type { ColumnType, Generated } from 'kysely';

export type Role = 'user' | 'staff' | 'partner';
export const ROLES: readonly Role[] = ['user', 'staff', 'partner'];

export interface AccountsTable {
  id: Generated<string>;
  /** Integer identity, shown where a service wants one (partners `user_id`). */
  number: Generated<number>;
  /** Tracking-service user identifier. */
  ldid: Generated<string>;
  email: string | null;
  password_hash: string | null;
  first_name: Generated<string>;
  last_name: Generated<string>;
  gender: number | null;
  birth_date: ColumnType<string | null, string | null, string | null>;
  language: string | null;
  country: string | null;
  image_url: string | null;
  roles: Generated<Role[]>;
  external_issuer: string | null;
  external_subject: string | null;
  /** Every token we issue carries it (`ver`); bumping it ends them all. */
  token_version: Generated<number>;
  disabled_at: Date | null;
  /** Who made the account: the user (registration), an operator (CLI) or an external provider. */
  created_via: Generated<AccountOrigin>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export type AccountOrigin = 'registration' | 'operator' | 'external';

export interface SigningKeysTable {
  kid: string;
  alg: string;
  public_jwk: ColumnType<JsonWebKeyRecord, string, string>;
  private_jwk: ColumnType<JsonWebKeyRecord, string, string>;
  created_at: Generated<Date>;
  retired_at: Date | null;
}

export type JsonWebKeyRecord = Record<string, string>;

export interface OAuthClientsTable {
  /** The public client_id. */
  id: string;
  /** Immutable after creation (a trigger refuses changes). */
  name: string;
  /** sha256 of the secret (the secret is 256 random bits, shown once). */
  secret_hash: string;
  redirect_uris: string[];
  owner_account_id: string | null;
  /** Registered by staff: no consent screen. Third-party clients always ask. */
  first_party: Generated<boolean>;
  /** `none`: a public client (a native or mobile app, RFC 8252): no secret at the token endpoint, PKCE required. */
  token_endpoint_auth_method: Generated<TokenEndpointAuthMethod>;
  created_at: Generated<Date>;
  revoked_at: Date | null;
}

/** How a client authenticates at the token endpoint (migration 0053). */
export const TOKEN_ENDPOINT_AUTH_METHODS = ['client_secret_basic', 'none'] as const;
export type TokenEndpointAuthMethod = (typeof TOKEN_ENDPOINT_AUTH_METHODS)[number];

/** What a user allowed a third-party client (scopes), until they revoke it. */
export interface OAuthConsentsTable {
  account_id: string;
  client_id: string;
  scopes: string[];
  granted_at: Generated<Date>;
  revoked_at: Date | null;
}

/** Ids (`jti`) of revoked access tokens, kept until the token expires. */
export interface RevokedTokensTable {
  jti: string;
  expires_at: Date;
}

/** Ids of revoked oidc-provider grants (migration 0056), kept until their last access token expires. */
export interface RevokedGrantsTable {
  grant_id: string;
  expires_at: Date;
}

export interface ApiKeysTable {
  id: Generated<string>;
  client_id: string;
  /** First characters of the key, shown in listings to tell keys apart. */
  prefix: string;
  /** sha256 of the key (the key is 256 random bits, shown once). */
  key_hash: string;
  label: string | null;
  created_at: Generated<Date>;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

/** oidc-provider's records (sessions, interactions, codes, grants...), one table for every model. */
export interface OidcPayloadsTable {
  model: string;
  id: string;
  payload: ColumnType<Record<string, unknown>, string, string>;
  grant_id: string | null;
  user_code: string | null;
  uid: string | null;
  expires_at: Date | null;
  consumed_at: Date | null;
}

/** A sign-in of the account page (migration 0066): the cookie holds the id, this row its hash. */
export interface AccountSessionsTable {
  id_hash: string;
  account_id: string;
  token_version: number;
  created_at: Generated<Date>;
  expires_at: Date;
}

export interface AccountTables {
  accounts: AccountsTable;
  signing_keys: SigningKeysTable;
  oauth_clients: OAuthClientsTable;
  api_keys: ApiKeysTable;
  oidc_payloads: OidcPayloadsTable;
  oauth_consents: OAuthConsentsTable;
  revoked_tokens: RevokedTokensTable;
  revoked_grants: RevokedGrantsTable;
  account_sessions: AccountSessionsTable;
}
