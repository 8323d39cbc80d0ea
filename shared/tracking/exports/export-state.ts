import type { Selectable } from 'kysely';
import type { TrackingExportsTable } from '../../db/schema/exports.ts';
import { TRACKING_PREFIX } from '../iri.ts';

/**
 * What an export shows of itself (its row, state, progress and link), apart from the store that
 * writes it: the API's answers and the `export_ready` event read it (docs/tracking-exports.md).
 */

export type ExportRow = Selectable<TrackingExportsTable>;

/** What an export shows: the stored status, or `expired` once its time is over (before the cleanup removes it). */
export type ExportState = ExportRow['status'] | 'expired';

/** The collection path of exports (`/v2/exports`). */
export const EXPORTS_PATH = `${TRACKING_PREFIX}/exports`;

/** The state a reader sees at `now`. */
export function exportState(row: ExportRow, now = new Date()): ExportState {
  return row.status === 'done' && row.expires_at !== null && row.expires_at <= now ? 'expired' : row.status;
}

/** 0 to 1: the share of the activities handled (1 once done, whatever happened to the count). */
export function exportProgress(row: ExportRow): number {
  if (row.status === 'done') return 1;
  if (!row.activity_count) return 0;
  return Math.min(1, Math.round((row.processed_count / row.activity_count) * 10_000) / 10_000);
}

/** The browser link of a finished export (`<PUBLIC_URL>/v2/exports/<id>/download?token=…`); null otherwise. */
export function exportDownloadUrl(publicUrl: string, row: ExportRow, now = new Date()): string | null {
  if (exportState(row, now) !== 'done') return null;
  return `${publicUrl}${EXPORTS_PATH}/${row.id}/download?token=${row.download_token}`;
}
