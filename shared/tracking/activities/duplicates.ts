import { webcrypto } from 'node:crypto';
import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { DomainError } from '../../errors.ts';
import { iri } from '../iri.ts';

/**
 * Duplicate activities (docs/tracking-activities.md, "Duplicates"). A new activity duplicates a
 * stored one of the same user when
 *
 * - it is imported from a file whose bytes have the same SHA-256 as the file the stored one was
 *   imported from, or
 * - it starts in the same second (UTC, fractions dropped) and lasts the same whole seconds,
 *   whatever the input (JSON or file) of either.
 *
 * A duplicate is refused unless the client asks to keep it. Both lookups are one probe of the
 * unique indexes of migration 0057, which also stop two identical creates sent at once.
 */

/** What a create does with a duplicate: refuse it (409, the default) or store it beside the other. */
export const DUPLICATE_POLICIES = ['refuse', 'keep'] as const;
export type DuplicatePolicy = (typeof DUPLICATE_POLICIES)[number];

/** Which rule made an activity a duplicate. */
export type DuplicateRule = 'file' | 'start-duration';

/** What a new activity is compared on. */
export interface DuplicateProbe {
  startdate: Date;
  duration: number;
  /** The imported file's SHA-256; null for a JSON create. */
  fileSha256: Uint8Array | null;
}

/** The new activity duplicates the caller's activity `existingId`: a conflict naming it. */
export class DuplicateActivityError extends DomainError {
  readonly existingId: string;
  readonly rule: DuplicateRule;

  constructor(existingId: string, rule: DuplicateRule) {
    const same =
      rule === 'file' ? 'was imported from the same file' : 'has the same start (to the second) and duration';
    super(
      'conflict',
      `The activity ${iri('activities', existingId)} ${same}: this one is a duplicate. Send duplicates=keep to store it too.`,
    );
    this.name = 'DuplicateActivityError';
    this.existingId = existingId;
    this.rule = rule;
  }
}

/** SHA-256 of a file's bytes, computed off the event loop (WebCrypto runs it in libuv's pool). */
export async function fileSha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await webcrypto.subtle.digest('SHA-256', bytes));
}

/** The start second as the index of migration 0057 writes it (the same expression, so it is used). */
const startSecond = (value: RawBuilder<unknown>) => sql`date_trunc('second', ${value} at time zone 'UTC')`;

/** Activities of `userId` the start-and-duration rule matches, as a query on `activities d`. */
const sameStart = (userId: string, probe: DuplicateProbe) => sql`
  select d.id, d.created_at, 2 as rule from activities d
  where d.user_id = ${userId}
    and ${startSecond(sql`d.startdate`)} = ${startSecond(sql`${probe.startdate}::timestamptz`)}
    and d.duration = ${probe.duration}::int`;

/** Activities of `userId` imported from the same file. */
const sameFile = (userId: string, digest: Uint8Array) => sql`
  select d.id, d.created_at, 1 as rule from activities d
  where d.user_id = ${userId} and d.file_sha256 = ${Buffer.from(digest)}::bytea`;

/**
 * The condition a new activity's insert is made under: no stored activity of the user it would
 * duplicate (kept duplicates included, which the unique indexes do not compare).
 */
export function noDuplicateOf(userId: string, probe: DuplicateProbe): RawBuilder<unknown> {
  const file = probe.fileSha256 === null ? sql`` : sql` and not exists (${sameFile(userId, probe.fileSha256)})`;
  return sql`not exists (${sameStart(userId, probe)})${file}`;
}

/** The stored activities of `userId` the probe duplicates: same-file ones first, then the oldest. */
export function duplicatesOf(userId: string, probe: DuplicateProbe): RawBuilder<{ id: string; rule: number }> {
  const union =
    probe.fileSha256 === null
      ? sameStart(userId, probe)
      : sql`${sameFile(userId, probe.fileSha256)} union all ${sameStart(userId, probe)}`;
  return sql<{ id: string; rule: number }>`select id, rule from (${union}) m order by rule, created_at, id`;
}

/** The stored activity of `userId` the probe duplicates, if any (the first of duplicatesOf). */
export async function findDuplicate(
  db: Db,
  userId: string,
  probe: DuplicateProbe,
): Promise<{ id: string; rule: DuplicateRule } | undefined> {
  const { rows } = await sql<{ id: string; rule: number }>`${duplicatesOf(userId, probe)} limit 1`.execute(db);
  const found = rows[0];
  return found && { id: found.id, rule: found.rule === 1 ? 'file' : 'start-duration' };
}
