import { sql } from 'kysely';
import { ensureTrackingUser } from '../../shared/tracking/users/store.ts';
import type { TrackingTestApi, TrackingTestUser } from './tracking.ts';

/** Shared by the test/tracking-activities-*.test.ts files (not a test file itself). */

export const RUNNING = 121;
export const HIKING = 168;
export type Body = Record<string, unknown>;

export const me = (u: TrackingTestUser) => `/v2/users/${u.ldid}`;

/** A manual activity of `u`, with `fields` replacing or adding members. */
export const activity = (u: TrackingTestUser, fields: Record<string, unknown> = {}) => ({
  name: 'Morning run',
  user: me(u),
  sport: `/v2/sports/${RUNNING}`,
  startdate: '2024-05-01T08:30:00+02:00',
  duration: 3,
  dataSummaries: { '5': 10.5, '24': 3 },
  ...fields,
});

export const ids = (body: { 'hydra:member': { id: string }[] }) => body['hydra:member'].map((m) => m.id);
export const violations = (body: { violations: { propertyPath: string }[] }) =>
  body.violations.map((v) => v.propertyPath);

/** The activity calls and database lookups of these tests, against `api` and its database. */
export function activityCalls(api: TrackingTestApi) {
  const { db } = api.database;
  const post = (u: TrackingTestUser, body: unknown) => api.call('POST', '/activities', u, { body });
  const created = async (u: TrackingTestUser, fields: Body = {}): Promise<Body & { id: string }> => {
    const res = await post(u, activity(u, fields));
    if (res.status !== 201) throw new Error(`POST answered ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const list = (u: TrackingTestUser, query = '') => api.call('GET', `/activities${query}`, u);

  /** A device of `u`, inserted directly (the devices resource is tested on its own). */
  async function deviceOf(u: TrackingTestUser): Promise<string> {
    await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
    const row = await db
      .insertInto('user_devices')
      .values({
        user_id: u.ldid,
        serial: `SN-${Math.random().toString(36).slice(2, 10)}`,
        model_id: 1,
        firmware_id: 1,
        last_connected_at: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  const outboxOf = (activityId: string) =>
    db
      .selectFrom('outbox')
      .select(['queue', 'job_name', 'job_id', 'payload'])
      .where(sql<string>`payload->>'activityId'`, '=', activityId)
      .where('queue', '=', 'records')
      .orderBy('id')
      .execute();

  return { post, created, list, deviceOf, outboxOf };
}
