import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { StoredHeaders } from '../db/schema/idempotency.ts';
import type { BodyFingerprint, RequestFingerprint } from './key.ts';

/**
 * The idempotency keys in PostgreSQL (migration 0055, docs/idempotency.md). A request claims its
 * key in one statement; only the claim's owner records the answer or releases the key. Times are
 * the database's, so every API process agrees on leases and expiries.
 */

export interface KeyRef {
  scope: string;
  key: string;
}

/** The caller a key belongs to, as keyScope reads it (shared/idempotency/key.ts). */
export interface KeyCaller {
  accountId?: string | undefined;
}

/** The first answer, as a retry gets it again. */
export interface StoredAnswer {
  status: number;
  contentType: string | undefined;
  headers: StoredHeaders;
  body: Buffer;
}

export type Claim =
  /** The key is this request's: it runs, then records its answer or releases the key. */
  | { kind: 'claimed'; owner: string }
  /** Another request holds it and has not answered yet. */
  | { kind: 'in_flight' }
  /** A request answered under this key: the retry gets the same answer, if it is the same request. */
  | { kind: 'done'; request: RequestFingerprint; body: BodyFingerprint; answer: StoredAnswer };

export interface ClaimOptions {
  leaseSeconds: number;
  ttlSeconds: number;
}

const after = (seconds: number) => sql<Date>`now() + make_interval(secs => ${seconds})`;

/**
 * Claims the key for this request: a new key, an expired one (the expiry job has not deleted it
 * yet) and one whose owner stopped renewing its lease (its process died) are taken in the same
 * INSERT ... ON CONFLICT; a key held or answered is looked at instead.
 */
export async function claimKey(
  db: Db,
  ref: KeyRef & KeyCaller,
  request: RequestFingerprint,
  options: ClaimOptions,
): Promise<Claim> {
  const owner = randomUUID();
  const row = {
    scope: ref.scope,
    key: ref.key,
    account_id: ref.accountId ?? null,
    owner,
    request_method: request.method,
    request_path: request.path,
    request_type: request.contentType,
    request_headers: JSON.stringify(request.headers),
    lease_until: after(options.leaseSeconds),
    expires_at: after(options.ttlSeconds),
  };
  // A row may vanish between the claim and the look (released, expired): then claim again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const claimed = await db
      .insertInto('idempotency_keys')
      .values(row)
      .onConflict((oc) =>
        oc
          .columns(['scope', 'key'])
          .doUpdateSet({
            ...row,
            state: 'in_flight',
            body_sha256: null,
            body_size: null,
            response_status: null,
            response_type: null,
            response_headers: null,
            response_body: null,
            created_at: sql<Date>`now()`,
          })
          .where((eb) =>
            eb.or([
              eb('idempotency_keys.expires_at', '<=', sql<Date>`now()`),
              eb.and([
                eb('idempotency_keys.state', '=', 'in_flight'),
                eb('idempotency_keys.lease_until', '<=', sql<Date>`now()`),
              ]),
            ]),
          ),
      )
      .returning('owner')
      .executeTakeFirst();
    if (claimed) return { kind: 'claimed', owner };
    const held = await db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('scope', '=', ref.scope)
      .where('key', '=', ref.key)
      .executeTakeFirst();
    if (!held) continue;
    if (held.state === 'in_flight') return { kind: 'in_flight' };
    return {
      kind: 'done',
      request: {
        method: held.request_method,
        path: held.request_path,
        contentType: held.request_type,
        headers: held.request_headers,
      },
      body: { sha256: held.body_sha256 as Buffer, size: held.body_size ?? 0 },
      answer: {
        status: held.response_status ?? 200,
        contentType: held.response_type ?? undefined,
        headers: held.response_headers ?? {},
        body: held.response_body ?? Buffer.alloc(0),
      },
    };
  }
  // Claimed and released by others three times in a row: as good as in flight.
  return { kind: 'in_flight' };
}

/** Keeps the claim while its request runs (a slow upload outlives one lease). */
export async function renewKey(db: Db, ref: KeyRef, owner: string, leaseSeconds: number): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({ lease_until: after(leaseSeconds) })
    .where('scope', '=', ref.scope)
    .where('key', '=', ref.key)
    .where('owner', '=', owner)
    .where('state', '=', 'in_flight')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Records the answer, kept `ttlSeconds` from now. False when the claim was lost (its lease
 * lapsed and another request took the key): the answer is then not kept.
 */
export async function recordAnswer(
  db: Db,
  ref: KeyRef,
  owner: string,
  body: BodyFingerprint,
  answer: StoredAnswer,
  ttlSeconds: number,
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({
      state: 'done',
      body_sha256: body.sha256,
      body_size: body.size,
      response_status: answer.status,
      response_type: answer.contentType ?? null,
      response_headers: JSON.stringify(answer.headers),
      response_body: answer.body,
      expires_at: after(ttlSeconds),
    })
    .where('scope', '=', ref.scope)
    .where('key', '=', ref.key)
    .where('owner', '=', owner)
    .where('state', '=', 'in_flight')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Frees the key of a request that kept no answer (it failed): a retry runs again. */
export async function releaseKey(db: Db, ref: KeyRef, owner: string): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('scope', '=', ref.scope)
    .where('key', '=', ref.key)
    .where('owner', '=', owner)
    .where('state', '=', 'in_flight')
    .execute();
}

/** Rows deleted per statement, so one run never holds a long lock on a large backlog. */
const EXPIRE_BATCH = 1000;

/**
 * Deletes the expired keys (the `maintenance/idempotency-expire` job). Expired rows are already
 * ignored by claims; this only frees their space, so running it twice or on several workers at
 * once is harmless. Answers the number of rows deleted.
 */
export async function expireKeys(db: Db): Promise<number> {
  let deleted = 0;
  for (;;) {
    const result = await db
      .deleteFrom('idempotency_keys')
      .where(({ eb, refTuple, selectFrom }) =>
        eb(
          refTuple('scope', 'key'),
          'in',
          selectFrom('idempotency_keys')
            .select(['scope', 'key'])
            .where('expires_at', '<=', sql<Date>`now()`)
            .limit(EXPIRE_BATCH)
            .$asTuple('scope', 'key'),
        ),
      )
      .executeTakeFirst();
    const count = Number(result.numDeletedRows);
    deleted += count;
    if (count < EXPIRE_BATCH) return deleted;
  }
}
