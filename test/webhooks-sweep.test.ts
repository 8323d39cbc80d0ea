import test from 'ava';
import { Redis } from 'ioredis';
import { createLogger } from '../shared/observability/logger.ts';
import type { OutboxJob } from '../shared/queue/jobs.ts';
import { addJobsNow } from '../shared/queue/outbox.ts';
import { QueueSet } from '../shared/queue/queues.ts';
import { fanOutEvent } from '../shared/tracking/webhooks/fan-out.ts';
import { sweepLostDeliveries } from '../shared/tracking/webhooks/sweep.ts';
import { startWorkers } from '../workers/worker.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { activity, me } from './helpers/tracking-activities.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';

// A delivery's job goes to BullMQ without an outbox row: the fan-out adds it again when its own
// job runs again, and the sweep adds it again once Redis lost it (docs/webhooks.md, "Operations").

const api = await startTrackingApi({ env: { WEBHOOKS_ALLOW_HTTP: 'true', WEBHOOKS_ALLOW_PRIVATE: 'true' } });
const receiver = await startReceiver();
const queues = new QueueSet(new Redis(api.config.REDIS_URL, { maxRetriesPerRequest: 1 }), api.config.QUEUE_PREFIX);
test.after.always(async () => {
  await receiver.close();
  await queues.close();
  queues.connection.disconnect();
  await api.close();
});
const { db } = api.database;
const webhooks = queues.get('webhooks');
const stateOf = (jobId: string) => webhooks.getJobState(jobId);
const addJobs = (jobs: OutboxJob[]) => addJobsNow(queues, jobs);

test('a delivery whose job Redis lost is added again, by its fan-out run again and by the sweep, and sent once', async (t) => {
  const u = await api.user();
  const hook = await api.call('POST', '/user_web_hooks', u, {
    body: { user: me(u), url: `${receiver.url}/swept`, events: ['activity_create'] },
  });
  t.is(hook.status, 201);
  t.is((await api.call('POST', '/activities', u, { body: activity(u) })).status, 201);
  const event = await db
    .selectFrom('webhook_events')
    .select('id')
    .where('user_id', '=', u.ldid)
    .executeTakeFirstOrThrow();

  // The fan-out commits the delivery; Redis loses the job it added.
  const lost: OutboxJob[] = [];
  t.deepEqual(await fanOutEvent(db, event.id, async (jobs) => void lost.push(...jobs)), { events: 1, deliveries: 1 });
  // Its job run again (a worker stopped before its done mark) adds the same job again.
  const again: OutboxJob[] = [];
  await fanOutEvent(db, event.id, async (jobs) => void again.push(...jobs));
  t.deepEqual(
    again.map((j) => j.jobId),
    lost.map((j) => j.jobId),
  );
  const jobId = lost[0]?.jobId ?? '';
  t.is(await stateOf(jobId), 'unknown');

  // The sweep leaves alone the deliveries of events younger than its age...
  t.deepEqual(await sweepLostDeliveries(db, stateOf, addJobs, 3600), { checked: 0, added: 0 });
  // ...adds the lost job of an older one, once.
  t.deepEqual(await sweepLostDeliveries(db, stateOf, addJobs, 0), { checked: 1, added: 1 });
  t.is(await stateOf(jobId), 'waiting');
  t.deepEqual(await sweepLostDeliveries(db, stateOf, addJobs, 0), { checked: 1, added: 0 });

  // A worker runs the event's own job (relayed from its outbox row) and the delivery: sent once.
  const workers = await startWorkers(
    { ...api.config, WORKER_QUEUES: ['webhooks'] },
    { logger: createLogger('silent', 'worker') },
  );
  try {
    t.true(await receiver.until(() => receiver.at('/swept').length >= 1));
    const delivered = async () =>
      (await db.selectFrom('webhook_deliveries').select('state').where('event_id', '=', event.id).execute()).map(
        (d) => d.state,
      );
    for (let i = 0; i < 4800 && (await delivered())[0] !== 'delivered'; i++)
      await new Promise((r) => setTimeout(r, 25));
    t.deepEqual(await delivered(), ['delivered']);
    // Ended: the sweep looks at it no more.
    t.deepEqual(await sweepLostDeliveries(db, stateOf, addJobs, 0), { checked: 0, added: 0 });
  } finally {
    await workers.close();
  }
  t.is(receiver.at('/swept').length, 1);
  t.is(JSON.parse(receiver.at('/swept')[0]?.body ?? '{}').id, event.id);
});
