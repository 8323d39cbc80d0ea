import type { Selectable } from 'kysely';
import type { JobsTable } from '../../db/schema/jobs.ts';
import { formatDateTime } from '../dates.ts';
import { iri } from '../iri.ts';

export type JobRow = Selectable<JobsTable>;

const orNull = (d: Date | null) => (d === null ? null : formatDateTime(d));

/** `params` as v2.26 types them (an array of strings): `name=value`, in the order asked. */
export const paramsList = (params: Record<string, string>) => Object.entries(params).map(([k, v]) => `${k}=${v}`);

/** A Job node's members (without `@context`, `@id`, `@type`), v2.26's then ours (docs/tracking-files.md, "Jobs"). */
export function jobFields(row: JobRow) {
  return {
    id: row.id,
    state: row.state,
    type: row.type,
    params: paramsList(row.params),
    startedAt: orNull(row.started_at),
    owner: iri('users', row.user_id),
    activity: row.activity_id === null ? null : iri('activities', row.activity_id),
    tags: [] as string[],
    uniqueKey: null,
    parent: row.parent_id === null ? null : iri('jobs', row.parent_id),
    dueDate: null,
    waitingJob: null,
    createdAt: formatDateTime(row.created_at),
    updatedAt: formatDateTime(row.updated_at),
    // Ours.
    finishedAt: orNull(row.finished_at),
    fileName: row.file_name,
    progress: row.total === null ? null : { total: row.total, done: row.done_count, failed: row.failed_count },
    result: row.result,
    error: row.error,
  };
}
