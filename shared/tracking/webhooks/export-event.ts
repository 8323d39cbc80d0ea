import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import type { Json } from '../../queue/jobs.ts';
import { exportFields } from '../exports/export-fields.ts';
import { EXPORTS_PATH } from '../exports/export-state.ts';
import { TRACKING_PREFIX } from '../iri.ts';
import { emitTrackingEvent, hasListeners } from './events.ts';

/**
 * `export_ready`: an export is done. The data is the Export as GET /v2/exports/{id} answers it
 * then, without its download `url`: a delivery may be kept or forwarded by the receiver, and the
 * link would open the export to whoever holds it. The application fetches the export's IRI with
 * its token, which stops working the moment the user withdraws it. Emitted in the transaction
 * that marks it done, only when a hook listens.
 */
export async function emitExportReady(trx: Kysely<Database>, exportId: string, publicUrl: string): Promise<boolean> {
  const row = await trx.selectFrom('tracking_exports').selectAll().where('id', '=', exportId).executeTakeFirst();
  if (!row || !(await hasListeners(trx, row.user_id, 'export_ready'))) return false;
  const resource = `${EXPORTS_PATH}/${row.id}`;
  return emitTrackingEvent(trx, {
    type: 'export_ready',
    userId: row.user_id,
    resource,
    data: {
      '@context': `${TRACKING_PREFIX}/contexts/Export`,
      '@id': resource,
      '@type': 'Export',
      ...(withoutUrl(exportFields(publicUrl, row)) as { [key: string]: Json }),
    },
  });
}

function withoutUrl<T extends { url: unknown }>(fields: T): Omit<T, 'url'> {
  const { url: _url, ...rest } = fields;
  return rest;
}
