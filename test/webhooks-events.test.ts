import test from 'ava';
import { createLogger } from '../shared/observability/logger.ts';
import { startWorkers } from '../workers/worker.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { activity, me } from './helpers/tracking-activities.ts';
import { startReceiver, verified } from './helpers/webhook-receiver.ts';

// The extension events, emitted by the jobs when their result is ready: records_update (the
// records job), thumbnail_ready (the thumbnail job), export_ready (the export job).

const api = await startTrackingApi({
  env: { OUTBOX_POLL_MS: '50', WEBHOOKS_ALLOW_HTTP: 'true', WEBHOOKS_ALLOW_PRIVATE: 'true' },
});
const receiver = await startReceiver();
const workers = await startWorkers(
  { ...api.config, WORKER_QUEUES: ['records', 'thumbnails', 'exports', 'webhooks'] },
  { logger: createLogger('silent', 'worker') },
);
test.after.always(async () => {
  await receiver.close();
  await workers.close();
  await api.close();
});

test('records_update, thumbnail_ready and export_ready reach a hook with the resource as the API serves it', async (t) => {
  const u = await api.user();
  const made = await api.call('POST', '/user_web_hooks', u, {
    body: {
      user: me(u),
      url: `${receiver.url}/results`,
      events: ['records_update', 'thumbnail_ready', 'export_ready'],
    },
  });
  t.is(made.status, 201);
  const posted = await api.call('POST', '/activities', u, { body: activity(u) });
  t.is(posted.status, 201);
  const id: string = posted.body.id;
  const payloads = () => receiver.at('/results').map((r) => verified(made.body.secret, r));
  const ofType = (type: string) => payloads().find((p) => p.type === type);
  t.true(await receiver.until(() => Boolean(ofType('records_update') && ofType('thumbnail_ready'))));

  const records = ofType('records_update');
  const list = await api.call('GET', `/user_records?sport[]=/v2/sports/121`, u);
  t.is(records?.resource, `/v2/user_records?user=%2Fv2%2Fusers%2F${u.ldid}&sport%5B%5D=%2Fv2%2Fsports%2F121`);
  t.like(records?.data, { '@type': 'hydra:Collection', 'hydra:totalItems': list.body['hydra:totalItems'] });
  t.true(list.body['hydra:totalItems'] > 0);
  t.deepEqual(records?.data['hydra:member'], list.body['hydra:member']);

  const thumbnail = ofType('thumbnail_ready');
  const current = await api.call('GET', `/activities/${id}`, u, { headers: { accept: 'application/ld+json' } });
  t.is(thumbnail?.resource, `/v2/activities/${id}`);
  t.truthy(thumbnail?.data.thumbnail);
  t.is(thumbnail?.data.thumbnail, current.body.thumbnail);
  t.like(thumbnail?.data, { '@id': `/v2/activities/${id}`, '@type': 'Activity', name: 'Morning run' });

  const requested = await api.call('POST', '/exports', u);
  t.is(requested.status, 201);
  t.true(await receiver.until(() => Boolean(ofType('export_ready'))));
  const ready = ofType('export_ready');
  const exported = await api.call('GET', `/exports/${requested.body.id}`, u);
  t.is(ready?.resource, `/v2/exports/${requested.body.id}`);
  t.like(ready?.data, { '@type': 'Export', status: 'done', size: exported.body.size });
  // No download link: one kept or forwarded by the receiver would open the export to anyone.
  t.truthy(exported.body.url);
  t.false('url' in (ready?.data ?? {}));
  // No hook listened to activity_create: the post itself was not delivered.
  t.false(payloads().some((p) => p.type === 'activity_create'));
});
