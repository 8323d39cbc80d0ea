import type { ColumnType, Generated } from 'kysely';

export interface OutboxTable {
  id: Generated<number>;
  queue: string;
  job_name: string;
  job_id: string;
  payload: ColumnType<unknown, string, string>;
  created_at: Generated<Date>;
  sent_at: Date | null;
  attempts: Generated<number>;
  /** The job completed (its effect committed). */
  done_at: Date | null;
  /** The job failed its last attempt; it waits for an operator (done_at wins once retried). */
  failed_at: Date | null;
  /** When the reconciler last looked for the job in Redis. */
  checked_at: Date | null;
  /** The id of the request that wrote the row (X-Request-Id), null outside a request. */
  request_id: string | null;
  /** The W3C traceparent the job continues, null when there is none. */
  traceparent: string | null;
  /** The outbox epoch the row was relayed in (shared/queue/outbox-epoch.ts): part of its BullMQ job id. */
  epoch: Generated<number>;
  /** Runs asked again because Redis said completed while the row was not done: part of its BullMQ job id. */
  reruns: Generated<number>;
}

/** One row: the epoch of the outbox and the database it was set in. */
export interface OutboxEpochTable {
  singleton: Generated<boolean>;
  epoch: Generated<number>;
  database_identity: string | null;
  changed_at: Generated<Date>;
}

export interface CoreTables {
  outbox: OutboxTable;
  outbox_epoch: OutboxEpochTable;
}
