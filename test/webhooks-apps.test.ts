import test from 'ava';
import { sql } from 'kysely';
import { revokeConsent } from '../shared/accounts/consents.ts';
import { setAccountDisabled } from '../shared/accounts/revocation.ts';
import { deliverWebhook } from '../shared/tracking/webhooks/deliver.ts';
import { fanOutEvent } from '../shared/tracking/webhooks/fan-out.ts';
import type { SendResult } from '../shared/tracking/webhooks/send.ts';
import { allowedApp as allowedThirdPartyApp } from './helpers/third-party-apps.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, me } from './helpers/tracking-activities.ts';

// A web hook belongs to its user and to the application that made it (docs/webhooks.md): another
// application of the same user neither sees nor changes it, and once the application loses the
// user's access its hooks and their queued deliveries go in the same transaction, never sent.
// No worker runs here: the test makes the deliveries itself and tries them with a recording send.

const api = await startTrackingApi({ env: { WEBHOOKS_ALLOW_HTTP: 'true', WEBHOOKS_ALLOW_PRIVATE: 'true' } });
test.after.always(() => api.close());
const { db } = api.database;

const HOOK_URL = 'http://127.0.0.1:9/hook';
const allowedApp = (u: TrackingTestUser, name: string) => allowedThirdPartyApp(api, u, name);

const hookRows = (userLdid: string) =>
  db.selectFrom('user_web_hooks').select(['id', 'client_id']).where('user_id', '=', userLdid).execute();
const deliveriesOf = async (hookId: string) =>
  Number(
    (
      await db
        .selectFrom('webhook_deliveries')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('hook_id', '=', hookId)
        .executeTakeFirstOrThrow()
    ).n,
  );

/** Posts an activity (its activity_create event is written) and fans its event out: queued deliveries. */
async function queuedDelivery(u: TrackingTestUser, hookId: string, minute: number): Promise<string> {
  const start = `2024-05-01T06:${String(minute).padStart(2, '0')}:00+00:00`;
  const posted = await api.call('POST', '/activities', u, { body: activity(u, { startdate: start }) });
  if (posted.status !== 201) throw new Error(`POST /activities: ${posted.status}`);
  const event = await db
    .selectFrom('webhook_events')
    .select('id')
    .where('user_id', '=', u.ldid)
    .where('resource', '=', `/v2/activities/${posted.body.id}`)
    .executeTakeFirstOrThrow();
  await fanOutEvent(db, event.id, async () => {});
  const delivery = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('hook_id', '=', hookId)
    .where('event_id', '=', event.id)
    .executeTakeFirstOrThrow();
  return delivery.id;
}

/** Tries a delivery with a send that records instead of sending. */
async function tryDelivery(deliveryId: string) {
  const sent: string[] = [];
  const send = async (url: string): Promise<SendResult> => {
    sent.push(url);
    return { ok: true, statusCode: 204, durationMs: 1, error: null };
  };
  const outcome = await deliverWebhook(db, api.config, deliveryId, send);
  return { outcome, sent };
}

test("an application sees and changes only its own hooks, not another application's of the same user", async (t) => {
  const u = await api.user();
  const first = await allowedApp(u, 'First app');
  const second = await allowedApp(u, 'Second app');
  const made = await first.call('POST', '/user_web_hooks', { user: me(u), url: HOOK_URL });
  t.is(made.status, 201, JSON.stringify(made.body));
  const id: string = made.body.id;
  t.deepEqual(await hookRows(u.ldid), [{ id, client_id: first.clientId }]);

  t.is((await first.call('GET', '/user_web_hooks')).body['hydra:totalItems'], 1);
  t.is((await second.call('GET', '/user_web_hooks')).body['hydra:totalItems'], 0);
  // The first-party client of the tests is another application too.
  t.is((await api.call('GET', '/user_web_hooks', u)).body['hydra:totalItems'], 0);
  for (const [method, path, body] of [
    ['GET', `/user_web_hooks/${id}`],
    ['PUT', `/user_web_hooks/${id}`, { url: 'http://127.0.0.1:9/stolen' }],
    ['POST', `/user_web_hooks/${id}/rotate_secret`],
    ['GET', `/user_web_hooks/${id}/attempts`],
    ['DELETE', `/user_web_hooks/${id}`],
  ] as const) {
    const res = await second.call(method, path, body);
    t.is(res.status, 404, `${method} ${path} by another application`);
  }
  const row = await db
    .selectFrom('user_web_hooks')
    .select(['url', 'secret'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  t.is(row.url, HOOK_URL);
  t.is(row.secret, made.body.secret);
  t.is((await first.call('GET', `/user_web_hooks/${id}`)).status, 200);
});

test('withdrawing an application removes its hooks and their queued deliveries at once: nothing is sent', async (t) => {
  const u = await api.user();
  const app = await allowedApp(u, 'Withdrawn app');
  const kept = await allowedApp(u, 'Kept app');
  const hook = (await app.call('POST', '/user_web_hooks', { user: me(u), url: HOOK_URL })).body;
  const other = (await kept.call('POST', '/user_web_hooks', { user: me(u), url: HOOK_URL })).body;
  const delivery = await queuedDelivery(u, hook.id, 1);
  t.is(await deliveriesOf(hook.id), 1);

  t.true(await revokeConsent(db, u.id, app.clientId));
  t.deepEqual(
    (await hookRows(u.ldid)).map((h) => h.id),
    [other.id],
    "only the withdrawn application's hook is gone",
  );
  t.is(await deliveriesOf(hook.id), 0);
  const { outcome, sent } = await tryDelivery(delivery);
  t.is(outcome.status, 'skipped');
  t.deepEqual(sent, []);
  // Its token no longer works either.
  t.is((await app.call('GET', '/user_web_hooks')).status, 401);
});

test('disabling or deleting an application removes its hooks', async (t) => {
  const u = await api.user();
  const disabled = await allowedApp(u, 'Disabled app');
  const deleted = await allowedApp(u, 'Deleted app');
  await disabled.call('POST', '/user_web_hooks', { user: me(u), url: HOOK_URL });
  await deleted.call('POST', '/user_web_hooks', { user: me(u), url: HOOK_URL });
  t.is((await hookRows(u.ldid)).length, 2);

  await db.updateTable('oauth_clients').set({ revoked_at: sql`now()` }).where('id', '=', disabled.clientId).execute();
  t.deepEqual(
    (await hookRows(u.ldid)).map((h) => h.client_id),
    [deleted.clientId],
  );
  await db.deleteFrom('oauth_clients').where('id', '=', deleted.clientId).execute();
  t.deepEqual(await hookRows(u.ldid), []);
});

test('while the account is disabled no delivery is made, and a queued one is given up unsent', async (t) => {
  const u = await api.user();
  const app = await allowedApp(u, 'An app');
  const hook = (await app.call('POST', '/user_web_hooks', { user: me(u), url: HOOK_URL })).body;
  const delivery = await queuedDelivery(u, hook.id, 2);
  // A second event, written but not fanned out before the account is disabled.
  const posted = await api.call('POST', '/activities', u, {
    body: activity(u, { startdate: '2024-05-01T06:03:00+00:00' }),
  });
  t.is(posted.status, 201);
  const event = await db
    .selectFrom('webhook_events')
    .select('id')
    .where('resource', '=', `/v2/activities/${posted.body.id}`)
    .executeTakeFirstOrThrow();

  t.true(await setAccountDisabled(db, u.id, true));
  const { outcome, sent } = await tryDelivery(delivery);
  t.like(outcome, { status: 'given-up' });
  t.deepEqual(sent, []);
  t.like(await fanOutEvent(db, event.id, async () => {}), { deliveries: 0 });
});

test('a hook made before hooks belonged to an application is disabled; the first application that changes it makes it its own', async (t) => {
  const u = await api.user();
  const first = await allowedApp(u, 'Adopting app');
  const second = await allowedApp(u, 'Late app');
  t.is((await second.call('GET', '/user_web_hooks')).body['hydra:totalItems'], 0);
  // As migration 0065 leaves a hook of before.
  const legacy = await db
    .insertInto('user_web_hooks')
    .values({
      user_id: u.ldid,
      client_id: null,
      url: HOOK_URL,
      events: ['activity_create'],
      secret: 'whsec_legacy',
      disabled_at: new Date(),
      disabled_reason: 'made before',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  t.is((await second.call('GET', '/user_web_hooks')).body['hydra:totalItems'], 1);
  const adopted = await first.call('PUT', `/user_web_hooks/${legacy.id}`, { url: HOOK_URL });
  t.is(adopted.status, 200, JSON.stringify(adopted.body));
  t.like(adopted.body, { disabledAt: null, disabledReason: null });
  t.deepEqual(await hookRows(u.ldid), [{ id: legacy.id, client_id: first.clientId }]);
  t.is((await second.call('GET', `/user_web_hooks/${legacy.id}`)).status, 404);
});
