import { formatDateTime } from '../dates.ts';
import { iri } from '../iri.ts';
import { type ExportRow, exportDownloadUrl, exportProgress, exportState } from './export-state.ts';

const orNull = (d: Date | null) => (d === null ? null : formatDateTime(d));

/** An Export node's members (without `@context`, `@id`, `@type`), as the caller sees it now. */
export function exportFields(publicUrl: string, row: ExportRow) {
  return {
    id: row.id,
    user: iri('users', row.user_id),
    format: row.format,
    status: exportState(row),
    progress: exportProgress(row),
    activityCount: row.activity_count,
    size: row.size_bytes,
    url: exportDownloadUrl(publicUrl, row),
    error: row.error,
    createdAt: formatDateTime(row.created_at),
    startedAt: orNull(row.started_at),
    finishedAt: orNull(row.finished_at),
    expiresAt: orNull(row.expires_at),
  };
}
