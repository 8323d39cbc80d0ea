import test from 'ava';
import { allowedApp, TRACKING_SCOPES } from './helpers/third-party-apps.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { me } from './helpers/tracking-activities.ts';

// What acts on the account itself needs the `account` scope beside tracking's
// (docs/accounts.md "Scopes"): the personal-data export (email, names and allowed applications
// in profile.json) and scheduling the account's deletion. First-party tokens hold it.

const api = await startTrackingApi();
test.after.always(() => api.close());

const later = () => new Date(Date.now() + 30 * 86_400_000).toISOString().replace(/\.\d+Z$/, '+00:00');

test('an app allowed only tracking:read and tracking:write cannot export the account nor schedule its deletion (was: 201, 200)', async (t) => {
  const u = await api.user();
  const app = await allowedApp(api, u, 'Tracking only');
  const exported = await app.call('POST', `/users/${u.ldid}/export_personal_data`);
  t.is(exported.status, 403, JSON.stringify(exported.body));
  t.regex(exported.body['hydra:description'] ?? exported.body.detail ?? '', /scope "account"/);
  t.regex(exported.headers.get('www-authenticate') ?? '', /insufficient_scope.*account/);
  const scheduled = await app.call('PUT', `/users/${u.ldid}`, { scheduleDelete: later() });
  t.is(scheduled.status, 403);
  const row = await api.database.db
    .selectFrom('tracking_users')
    .select('schedule_delete')
    .where('id', '=', u.ldid)
    .executeTakeFirstOrThrow();
  t.is(row.schedule_delete, null);
  // Its own tracking data it still changes.
  t.is((await app.call('PUT', `/users/${u.ldid}`, { language: 'fr' })).status, 200);
  t.is((await app.call('POST', '/exports')).status, 201);
});

test('a personal-data export made with the account scope is hidden from a token without it', async (t) => {
  const u = await api.user();
  const app = await allowedApp(api, u, 'Tracking only');
  // The user's own first-party app exports everything.
  const made = await api.call('POST', `/users/${u.ldid}/export_personal_data`, u);
  t.is(made.status, 201, JSON.stringify(made.body));
  const id: string = made.body.id;
  t.is((await api.call('GET', `/exports/${id}`, u)).status, 200);
  t.is((await app.call('GET', `/exports/${id}`)).status, 404);
  t.is((await app.call('DELETE', `/exports/${id}`)).status, 404);
  const listed = await app.call('GET', '/exports');
  t.is(listed.status, 200);
  t.false(listed.body['hydra:member'].some((e: { id: string }) => e.id === id));
  t.true((await api.call('GET', '/exports', u)).body['hydra:member'].some((e: { id: string }) => e.id === id));
});

test('an app the user allowed the account scope exports the account and schedules its deletion', async (t) => {
  const u = await api.user();
  const app = await allowedApp(api, u, 'Account manager', [...TRACKING_SCOPES, 'account']);
  const exported = await app.call('POST', `/users/${u.ldid}/export_personal_data`);
  t.is(exported.status, 201, JSON.stringify(exported.body));
  t.is((await app.call('GET', `/exports/${exported.body.id}`)).status, 200);
  const scheduled = await app.call('PUT', `/users/${u.ldid}`, { scheduleDelete: later() });
  t.is(scheduled.status, 200, JSON.stringify(scheduled.body));
  t.truthy(scheduled.body.scheduleDelete);
  t.is(scheduled.body['@id'], me(u));
});
