import test from 'ava';
import { createLogger } from '../shared/observability/logger.ts';
import { startWorkers } from '../workers/worker.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { activity, me } from './helpers/tracking-activities.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';

// A hook failing past WEBHOOKS_DISABLE_AFTER_S (1 s here) is disabled: its owner reads why, its
// pending deliveries are given up, new events skip it, and a PUT enables it again.

const api = await startTrackingApi({
  env: {
    OUTBOX_POLL_MS: '50',
    WEBHOOKS_ALLOW_HTTP: 'true',
    WEBHOOKS_ALLOW_PRIVATE: 'true',
    WEBHOOKS_RETRY_BASE_MS: '20',
    WEBHOOKS_DISABLE_AFTER_S: '1',
  },
});
const receiver = await startReceiver();
const workers = await startWorkers(
  { ...api.config, WORKER_QUEUES: ['webhooks'] },
  { logger: createLogger('silent', 'worker') },
);
test.after.always(async () => {
  await receiver.close();
  await workers.close();
  await api.close();
});
const { db } = api.database;

test('a hook failing past the limit is disabled with its reason; a PUT enables it again', async (t) => {
  let down = true;
  receiver.on('/down', (_req, res) => {
    if (down) res.writeHead(503).end('maintenance');
    else res.writeHead(204).end();
  });
  const u = await api.user();
  const made = await api.call('POST', '/user_web_hooks', u, {
    body: { user: me(u), url: `${receiver.url}/down`, events: ['activity_create'] },
  });
  t.is(made.status, 201);
  const hookId: string = made.body.id;
  const post = async (minute: number) => {
    const startdate = `2024-05-01T08:${String(minute).padStart(2, '0')}:00+02:00`;
    const res = await api.call('POST', '/activities', u, { body: activity(u, { startdate }) });
    t.is(res.status, 201);
    return res.body.id as string;
  };
  await post(1);
  await post(2);

  const read = async () => (await api.call('GET', `/user_web_hooks/${hookId}`, u)).body;
  let hook = await read();
  for (let i = 0; i < 4800 && hook.disabledAt === null; i++) {
    await new Promise((r) => setTimeout(r, 25));
    hook = await read();
  }
  t.not(hook.disabledAt, null, 'disabled');
  t.regex(hook.disabledReason, /every delivery failed since .*attempts in a row.*HTTP 503: maintenance/);
  t.regex(hook.disabledReason, /PUT/);
  t.true(hook.consecutiveFailures >= 2, String(hook.consecutiveFailures));
  t.not(hook.startFailureDate, null);
  const attempts = (await api.call('GET', `/user_web_hooks/${hookId}/attempts`, u)).body['hydra:member'];
  t.true(attempts.length >= 2);
  t.true(attempts.every((a: { statusCode: number }) => a.statusCode === 503));

  // Every delivery of the hook was given up; none is left to send.
  const states = await db.selectFrom('webhook_deliveries').select('state').where('hook_id', '=', hookId).execute();
  t.true(states.length >= 2);
  t.true(states.every((s) => s.state === 'failed'));
  // A disabled hook is not listened to: an activity posted now writes no event.
  const before = await db.selectFrom('webhook_events').select('id').where('user_id', '=', u.ldid).execute();
  await post(3);
  t.deepEqual(await db.selectFrom('webhook_events').select('id').where('user_id', '=', u.ldid).execute(), before);

  // The owner fixes the receiver and changes the hook: it is enabled and hears the next event.
  down = false;
  const enabled = await api.call('PUT', `/user_web_hooks/${hookId}`, u, { body: { url: `${receiver.url}/down` } });
  t.is(enabled.status, 200);
  t.like(enabled.body, { disabledAt: null, disabledReason: null, consecutiveFailures: 0, startFailureDate: null });
  const seen = receiver.at('/down').length;
  const id = await post(4);
  t.true(await receiver.until(() => receiver.at('/down').length > seen));
  const last = receiver.at('/down').at(-1);
  t.is(JSON.parse(last?.body ?? '{}').resource, `/v2/activities/${id}`);
});
