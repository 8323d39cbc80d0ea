import type { Db } from '../../shared/db/database.ts';
import type { TrackingTestApi, TrackingTestUser } from './tracking.ts';

/** Reading /v2/jobs in the tests of imports, bulk imports and batch jobs (not a test file itself). */

type Body = Record<string, unknown>;

export function jobReader(api: TrackingTestApi) {
  const jobOf = async (u: TrackingTestUser, id: string) => (await api.call('GET', `/jobs/${id}`, u)).body as Body;
  return {
    jobOf,
    /** The job once it has ended (or as it is after `ms`: the test's assertion then says what it is). */
    async ended(u: TrackingTestUser, id: string, ms = 120_000): Promise<Body> {
      const end = Date.now() + ms;
      for (;;) {
        const job = await jobOf(u, id);
        if (!['pending', 'running'].includes(job.state as string) || Date.now() > end) return job;
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

/** Whether the relay moved the outbox row of the BullMQ job `outboxJobId` to Redis (within `ms`). */
export async function relayed(db: Db, outboxJobId: string, ms = 60_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const row = await db.selectFrom('outbox').select('sent_at').where('job_id', '=', outboxJobId).executeTakeFirst();
    if (row?.sent_at) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}
