import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema/index.ts';

/**
 * Job ids a restored database cannot mistake for the old Redis's (docs/operations.md, "Backup
 * and restore"). The outbox's job ids are deterministic, and BullMQ ignores an add whose id it
 * already holds: next to a Redis that outlived a restore, the restored rows' jobs would be taken
 * for done. So the BullMQ id of a row is its job id plus
 * - the outbox epoch: 0 (no suffix) until the database finds itself somewhere else than where
 *   the epoch was set (a dump restored, a backup brought back, a replica promoted), then the
 *   time of that discovery in seconds, which no earlier life of the data can have used;
 * - the row's reruns: how often the reconciler found its job completed in Redis while the row was
 *   not done here (the effect is not in this database, whatever Redis says).
 */

const SUFFIX = /@e\d+(?:r\d+)?$/;

/** The BullMQ id of an outbox row's job. */
export function bullJobId(jobId: string, epoch: number, reruns: number): string {
  if (epoch === 0 && reruns === 0) return jobId;
  return `${jobId}@e${epoch}${reruns === 0 ? '' : `r${reruns}`}`;
}

/** The outbox job id of a BullMQ job id (the rows a worker marks done or failed). */
export function outboxJobId(bullId: string): string {
  return bullId.replace(SUFFIX, '');
}

/** Where this database lives: the cluster, the database in it and the timeline (a promotion or a recovery moves it). */
export async function databaseIdentity(db: Kysely<Database>): Promise<string> {
  const { rows } = await sql<{ identity: string }>`
    select concat_ws('/',
      (select system_identifier from pg_control_system()),
      (select oid from pg_database where datname = current_database()),
      (select timeline_id from pg_control_checkpoint())) as identity`.execute(db);
  return rows[0]?.identity ?? '';
}

export interface EpochCheck {
  epoch: number;
  /** A new epoch began now: the database was restored, copied or promoted. */
  changed: boolean;
  /** Rows not done nor failed, put back in line for the relay under the new epoch. */
  reopened: number;
}

/**
 * Starts a new epoch when the database is not where its epoch was set (or when `force`d: an
 * operator after a restore the identity cannot show). The open rows are relayed again under the
 * new epoch: their jobs in any Redis are another life's. Rows failed stay failed (an operator's).
 */
export async function checkOutboxEpoch(db: Kysely<Database>, force = false): Promise<EpochCheck> {
  const identity = await databaseIdentity(db);
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('outbox_epoch')
      .select(['epoch', 'database_identity'])
      .forUpdate()
      .executeTakeFirstOrThrow();
    if (row.database_identity === null && !force) {
      // First relay of this database: nothing to tell apart yet.
      await trx.updateTable('outbox_epoch').set({ database_identity: identity }).execute();
      return { epoch: Number(row.epoch), changed: false, reopened: 0 };
    }
    if (row.database_identity === identity && !force) return { epoch: Number(row.epoch), changed: false, reopened: 0 };
    const { rows } = await sql<{ epoch: number }>`
      update outbox_epoch
      set epoch = greatest(epoch + 1, extract(epoch from clock_timestamp())::bigint),
        database_identity = ${identity}, changed_at = now()
      returning epoch`.execute(trx);
    const reopened = await trx
      .updateTable('outbox')
      .set({ sent_at: null, checked_at: null })
      .where('done_at', 'is', null)
      .where('failed_at', 'is', null)
      .where('sent_at', 'is not', null)
      .executeTakeFirst();
    return { epoch: Number(rows[0]?.epoch), changed: true, reopened: Number(reopened.numUpdatedRows) };
  });
}
