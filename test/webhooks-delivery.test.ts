import test from 'ava';
import { createLogger } from '../shared/observability/logger.ts';
import { startWorkers } from '../workers/worker.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, me } from './helpers/tracking-activities.ts';
import { type Received, startReceiver, verified } from './helpers/webhook-receiver.ts';

// Deliveries end to end: the API writes the events with the activities, a worker fans them out
// and sends them to a loopback receiver, which verifies every signature with `standardwebhooks`.

const env = {
  OUTBOX_POLL_MS: '50',
  WEBHOOKS_ALLOW_HTTP: 'true',
  WEBHOOKS_ALLOW_PRIVATE: 'true',
  WEBHOOKS_RETRY_BASE_MS: '20',
  // Long: the hanging receiver below must still hang when the other hook has everything.
  WEBHOOKS_TIMEOUT_MS: '30000',
};
const api = await startTrackingApi({ env });
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

const ALL_ACTIVITY_EVENTS = ['activity_create', 'activity_update', 'activity_delete'];

async function hook(u: TrackingTestUser, path: string, events = ALL_ACTIVITY_EVENTS) {
  const res = await api.call('POST', '/user_web_hooks', u, {
    body: { user: me(u), url: `${receiver.url}${path}`, events },
  });
  if (res.status !== 201) throw new Error(`POST /user_web_hooks: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; secret: string };
}

let minute = 0;
/** An activity of `u` that duplicates none of theirs (each starts a minute after the last). */
async function postActivity(u: TrackingTestUser, name: string): Promise<string> {
  minute++;
  const start = new Date(Date.UTC(2024, 4, 1, 6, 0) + minute * 60_000).toISOString().replace('.000Z', '+00:00');
  const res = await api.call('POST', '/activities', u, { body: activity(u, { name, startdate: start }) });
  if (res.status !== 201) throw new Error(`POST /activities: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id;
}

const rename = (u: TrackingTestUser, id: string, name: string) =>
  api.call('PUT', `/activities/${id}`, u, { body: { name } });

test('posts, updates and deletes reach each hook signed, in the order they happened for each activity', async (t) => {
  const u = await api.user();
  const a = await hook(u, '/order-a');
  const b = await hook(u, '/order-b');
  // Three activities changed at once, each one's changes one after the other.
  const ids = await Promise.all(
    [1, 2, 3].map(async (n) => {
      const id = await postActivity(u, `run ${n}`);
      t.is((await rename(u, id, `run ${n} again`)).status, 200);
      t.is((await rename(u, id, `run ${n} last`)).status, 200);
      t.is((await api.call('DELETE', `/activities/${id}`, u)).status, 204);
      return id;
    }),
  );
  const expected = ids.length * 4;
  t.true(
    await receiver.until(
      () => receiver.at('/order-a').length >= expected && receiver.at('/order-b').length >= expected,
    ),
  );
  for (const [path, secret] of [
    ['/order-a', a.secret],
    ['/order-b', b.secret],
  ] as const) {
    const deliveries = receiver.at(path);
    t.is(deliveries.length, expected, `${path}: each delivery exactly once`);
    t.is(new Set(deliveries.map((r) => r.headers['webhook-id'])).size, expected);
    const payloads = deliveries.map((r: Received) => verified(secret, r));
    for (const [n, id] of ids.entries()) {
      const mine = payloads.filter((p) => p.resource === `/v2/activities/${id}`);
      t.deepEqual(
        mine.map((p) => p.type),
        ['activity_create', 'activity_update', 'activity_update', 'activity_delete'],
        `${path} ${id}`,
      );
      t.deepEqual(
        mine.map((p) => p.data.name),
        [`run ${n + 1}`, `run ${n + 1} again`, `run ${n + 1} last`, `run ${n + 1} last`],
      );
      for (const p of mine) {
        t.regex(p.id, /^evt_[0-9a-f]{32}$/);
        t.like(p.data, { '@context': '/v2/contexts/Activity', '@id': `/v2/activities/${id}`, '@type': 'Activity', id });
      }
    }
  }
  // The same event has the same id for every hook; each hook's message has its own webhook-id.
  const eventIds = (path: string) => receiver.at(path).map((r) => JSON.parse(r.body).id as string);
  t.deepEqual(eventIds('/order-a').sort(), eventIds('/order-b').sort());
  // A delivery signed with another hook's secret does not verify.
  t.throws(() => verified(b.secret, receiver.at('/order-a')[0] as Received));
});

test('a hook hears only its own user and the events it subscribed to', async (t) => {
  const u = await api.user();
  const other = await api.user();
  await hook(u, '/only-deletes', ['activity_delete']);
  const id = await postActivity(u, 'kept');
  await postActivity(other, 'not mine');
  t.is((await rename(u, id, 'renamed')).status, 200);
  t.is((await api.call('DELETE', `/activities/${id}`, u)).status, 204);
  t.true(await receiver.until(() => receiver.at('/only-deletes').length >= 1));
  // The delete came after the create and the update: had they been sent, they would be first.
  const types = receiver.at('/only-deletes').map((r) => JSON.parse(r.body).type);
  t.deepEqual(types, ['activity_delete']);
});

test('a receiver that hangs does not hold the deliveries of another hook', async (t) => {
  const u = await api.user();
  const hung: { ended: () => boolean }[] = [];
  receiver.on('/hang', (_req, res) => {
    hung.push({ ended: () => res.writableEnded || res.destroyed });
  });
  await hook(u, '/hang', ['activity_create']);
  await hook(u, '/alive', ['activity_create']);
  for (let i = 0; i < 5; i++) await postActivity(u, `busy ${i}`);
  t.true(await receiver.until(() => receiver.at('/alive').length >= 5));
  t.true(hung.length >= 1, 'the hanging receiver was called');
  t.true(
    hung.every((h) => !h.ended()),
    'and it still hangs',
  );
});

test('after rotate_secret, deliveries carry a signature by the new secret and one by the previous', async (t) => {
  const u = await api.user();
  const made = await hook(u, '/rotated', ['activity_create']);
  const rotated = await api.call('POST', `/user_web_hooks/${made.id}/rotate_secret`, u);
  await postActivity(u, 'after rotation');
  t.true(await receiver.until(() => receiver.at('/rotated').length >= 1));
  const delivery = receiver.at('/rotated')[0] as Received;
  t.is(delivery.headers['webhook-signature']?.split(' ').length, 2);
  t.is(verified(rotated.body.secret, delivery).type, 'activity_create');
  t.is(verified(made.secret, delivery).type, 'activity_create');
  t.regex(delivery.headers['webhook-id'] ?? '', /^msg_[0-9a-f]{32}$/);
  t.regex(delivery.headers['webhook-timestamp'] ?? '', /^\d{10}$/);
  t.is(delivery.headers['content-type'], 'application/json');
});

test('a failing receiver is retried until it answers; the owner reads the attempts and the failures are cleared', async (t) => {
  const u = await api.user();
  receiver.on('/flaky', (_req, res, n) => {
    if (n <= 2) res.writeHead(500, { 'content-type': 'text/plain' }).end('database is down');
    else res.writeHead(202).end();
  });
  const made = await hook(u, '/flaky', ['activity_create']);
  await postActivity(u, 'retried');
  t.true(await receiver.until(() => receiver.at('/flaky').length >= 3));
  const attemptsOf = async () => (await api.call('GET', `/user_web_hooks/${made.id}/attempts`, u)).body;
  // The third attempt is recorded just after the receiver answered it.
  for (let i = 0; i < 4800 && (await attemptsOf())['hydra:totalItems'] < 3; i++)
    await new Promise((r) => setTimeout(r, 25));
  const attempts = (await attemptsOf())['hydra:member'];
  t.deepEqual(
    attempts.map((a: { statusCode: number }) => a.statusCode),
    [202, 500, 500],
  );
  t.like(attempts[1], { eventType: 'activity_create', error: 'HTTP 500: database is down' });
  t.is(attempts[0].error, null);
  t.true(attempts.every((a: { durationMs: number }) => Number.isInteger(a.durationMs)));
  // The three tries carried the same message: a receiver can drop a repeat by its webhook-id.
  t.is(new Set(receiver.at('/flaky').map((r) => r.headers['webhook-id'])).size, 1);
  const after = (await api.call('GET', `/user_web_hooks/${made.id}`, u)).body;
  t.like(after, { consecutiveFailures: 0, startFailureDate: null, disabledAt: null });
});
