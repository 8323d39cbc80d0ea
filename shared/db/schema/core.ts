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
}

export interface CoreTables {
  outbox: OutboxTable;
}
