import type { ColumnType, Generated } from 'kysely';

/** What a stored answer repeats of its headers: the ones its operation set (Location, Import-*). */
export type StoredHeaders = Record<string, string>;

/** The first answer to a request sent with an Idempotency-Key (migration 0055; docs/idempotency.md). */
export interface IdempotencyKeysTable {
  /** Whose key: `account:<account id>`, or `client:<client id>` for a caller without an account. */
  scope: string;
  key: string;
  /** The account of an `account:` scope (deleting the account deletes its keys), else null. */
  account_id: string | null;
  /** The claim of the request working on the key (a random uuid). */
  owner: string;
  state: Generated<'in_flight' | 'done'>;
  request_method: string;
  /** The path with its query string, as sent. */
  request_path: string;
  /** The request's Content-Type ('' without one). */
  request_type: string;
  /** The values of the request headers the operation declares (Accept-Language). */
  request_headers: ColumnType<StoredHeaders, string, string>;
  /** SHA-256 of the body bytes as sent; set with the answer. */
  body_sha256: Buffer | null;
  body_size: number | null;
  response_status: number | null;
  response_type: string | null;
  response_headers: ColumnType<StoredHeaders | null, string | null, string | null>;
  response_body: Buffer | null;
  created_at: Generated<Date>;
  /** A request in flight renews it; past it, a retry may take the key over. */
  lease_until: ColumnType<Date, Date | string, Date | string>;
  expires_at: ColumnType<Date, Date | string, Date | string>;
}

export interface IdempotencyTables {
  idempotency_keys: IdempotencyKeysTable;
}
