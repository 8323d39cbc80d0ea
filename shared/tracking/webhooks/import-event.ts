import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import type { Json } from '../../queue/jobs.ts';
import { iri, TRACKING_PREFIX } from '../iri.ts';
import { type JobRow, jobFields } from '../jobs/job-fields.ts';
import { emitTrackingEvent } from './events.ts';

/**
 * `import_done` / `import_failed`: an import that ran as a job ended (docs/webhooks.md). The data
 * is the Job as GET /v2/jobs/{id} answers it then: its `activity` once done, its `error` once
 * failed; for a bulk import, the parent with its `progress` (its files are its children). Emitted
 * in the transaction that ends the job, only when a hook listens; a bulk import's files emit none.
 */
export function emitImportEvent(trx: Kysely<Database>, row: JobRow): Promise<boolean> {
  const resource = iri('jobs', row.id);
  return emitTrackingEvent(trx, {
    type: row.state === 'done' ? 'import_done' : 'import_failed',
    userId: row.user_id,
    resource,
    data: {
      '@context': `${TRACKING_PREFIX}/contexts/Job`,
      '@id': resource,
      '@type': 'Job',
      ...(jobFields(row) as { [key: string]: Json }),
    },
  });
}
