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
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface SigningKeysTable {
  kid: string;
  alg: string;
  public_jwk: ColumnType<JsonWebKeyRecord, string, string>;
  private_jwk: ColumnType<JsonWebKeyRecord, string, string>;
  created_at: Generated<Date>;
  retired_at: Date | null;
}

export type JsonWebKeyRecord = Record<string, string>;

export interface AccountTables {
  accounts: AccountsTable;
  signing_keys: SigningKeysTable;
}
