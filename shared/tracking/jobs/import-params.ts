import type { DuplicatePolicy } from '../activities/duplicates.ts';
import type { FileImportFields } from '../imports/activity-import.ts';

/**
 * An import's fields as a job keeps them (`params`, strings; v2.26 lists them as `name=value`)
 * and back: the same fields the synchronous import takes (docs/tracking-files.md).
 */
export type ImportParams = Partial<
  Record<'sport' | 'name' | 'comment' | 'userDevice' | 'connector' | 'duplicates', string>
>;

export function importParams(fields: FileImportFields): ImportParams {
  const params: ImportParams = {};
  if (fields.sportId !== undefined) params.sport = String(fields.sportId);
  if (fields.name !== undefined) params.name = fields.name;
  if (fields.comment !== undefined) params.comment = fields.comment;
  if (fields.userDeviceId !== undefined) params.userDevice = fields.userDeviceId;
  if (fields.connectorId !== undefined) params.connector = String(fields.connectorId);
  if (fields.duplicates !== undefined) params.duplicates = fields.duplicates;
  return params;
}

export function importFields(params: ImportParams, inBulk: boolean): FileImportFields {
  return {
    sportId: params.sport === undefined ? undefined : Number(params.sport),
    name: params.name,
    comment: params.comment,
    userDeviceId: params.userDevice,
    connectorId: params.connector === undefined ? undefined : Number(params.connector),
    duplicates: params.duplicates as DuplicatePolicy | undefined,
    withoutEvent: inBulk,
  };
}
