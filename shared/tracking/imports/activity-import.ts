import type { Db } from '../../db/database.ts';
import type { ActivityRow } from '../../db/schema/tracking.ts';
import { ACTIVITY_LIMITS, contentLimitProblems } from '../activities/content.ts';
import type { ActivityContent } from '../activities/data.ts';
import { type DuplicatePolicy, fileSha256 } from '../activities/duplicates.ts';
import { createActivity } from '../activities/store.ts';
import { ImportError } from '../formats/import-error.ts';
import type { ActivityFileFormat, ImportedActivity } from '../formats/import-options.ts';
import type { ActivityImportPool } from './pool.ts';

/**
 * An activity created from a GPX, TCX or FIT file (POST /v2/activities with a file,
 * docs/tracking-files.md): the file is read in the import pool, checked against what an activity
 * may hold, and stored for the caller like a JSON create (same transaction, same outbox jobs, so
 * the records and the thumbnail follow).
 */

/** The seeded `file-import` connector (shared/referentials/tracking-devices.json): the default of a file import. */
export const FILE_IMPORT_CONNECTOR_ID = 3;

/** What the caller may say along with a file; absent members come from the file or the defaults. */
export interface FileImportFields {
  /** Wins over the file's sport. */
  sportId?: number | undefined;
  /** Replaces the file's name. */
  name?: string | undefined;
  comment?: string | undefined;
  /** One of the caller's devices: the activity is then not manual. */
  userDeviceId?: string | undefined;
  /** Default FILE_IMPORT_CONNECTOR_ID. */
  connectorId?: number | undefined;
  /** A duplicate of a stored activity (duplicates.ts) is refused unless this is `keep`. */
  duplicates?: DuplicatePolicy | undefined;
  /** A file of a bulk import: no `activity_create` event of its own (store.ts). */
  withoutEvent?: boolean | undefined;
}

export interface ImportedActivityRow {
  row: ActivityRow;
  format: ActivityFileFormat;
  sportSource: ImportedActivity['sportSource'];
  warnings: string[];
  /** The worker thread that read the file. */
  threadId: number;
}

/**
 * Why a file's content cannot be stored as one activity, if so: more than an activity may hold
 * (activities/content.ts; the importers stop at the same limits, but a declared duration may
 * reach further), or a datastream beyond its cells, as a JSON create is bounded.
 */
export function storageProblem(content: ActivityContent): ImportError | undefined {
  const L = ACTIVITY_LIMITS;
  const [over] = contentLimitProblems(content);
  if (over) return new ImportError('over-limit', `the recording ${over.message}`);
  const cells = (content.datastream.channels.size + 1) * content.datastream.elapsed.length;
  if (cells > L.maxDatastreamCells)
    return new ImportError(
      'over-limit',
      `the recording has ${content.datastream.elapsed.length} samples × ${content.datastream.channels.size} datatypes, more than the ${L.maxDatastreamCells} values an activity may hold`,
    );
  return undefined;
}

/** Reads `bytes` off the event loop and stores the activity for the caller. */
export async function importActivity(
  db: Db,
  pool: ActivityImportPool,
  callerId: string,
  file: { bytes: Uint8Array; contentType?: string | undefined },
  fields: FileImportFields,
): Promise<ImportedActivityRow> {
  // The digest the duplicate rule compares (duplicates.ts), before the pool takes the bytes away.
  const sha256 = await fileSha256(file.bytes);
  const { imported, threadId } = await pool.import(file.bytes, {
    ...(file.contentType ? { contentType: file.contentType } : {}),
    ...(fields.sportId !== undefined ? { sportId: fields.sportId } : {}),
  });
  const problem = storageProblem(imported.content);
  if (problem) throw problem;
  const content: ActivityContent = {
    ...imported.content,
    ...(fields.name !== undefined ? { name: fields.name } : {}),
  };
  const row = await createActivity(db, callerId, {
    userId: callerId,
    userDeviceId: fields.userDeviceId ?? null,
    connectorId: fields.connectorId ?? FILE_IMPORT_CONNECTOR_ID,
    comment: fields.comment ?? null,
    userSession: null,
    images: [],
    tags: null,
    location: null,
    content,
    fileSha256: sha256,
    duplicates: fields.duplicates,
    withoutEvent: fields.withoutEvent,
  });
  return { row, format: imported.format, sportSource: imported.sportSource, warnings: imported.warnings, threadId };
}
