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
}

export interface CoreTables {
  outbox: OutboxTable;
}
