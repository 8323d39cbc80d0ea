import assert from 'node:assert/strict';
import test from 'ava';
import fc from 'fast-check';
import { sql } from 'kysely';
import { emptyDatastream, emptyTrack } from '../shared/tracking/activities/data.ts';
import { createActivity, deleteActivity, updateActivity } from '../shared/tracking/activities/store.ts';
import { createChallenge, updateChallenge } from '../shared/tracking/challenges/store.ts';
import { createEquipment } from '../shared/tracking/gear/store.ts';
import { refreshChallenge } from '../shared/tracking/progress/challenge-progress.ts';
import { lockUserRecords } from '../shared/tracking/records/records-store.ts';
import { createTestDatabase } from './helpers/db.ts';
import { applyProgressNow, rebuildProgressNow } from './helpers/progress.ts';
import { insertTrackingUser } from './helpers/records.ts';

// The property of docs/tracking-gear-goals-challenges.md: whatever activity changes happen
// (creates naming gear or taking the auto-assigned one, PUTs of sport, gear and distance,
// deletes, challenges' new targets, rebuilds) and in whatever order their jobs run (late, twice,
// out of order), once every job has run the gear totals and the challenges' results and
// achievements equal what the activities give when summed directly in SQL.

const database = await createTestDatabase();
const { db } = database;
test.after.always(() => database.drop());

const RUNNING = 121;
const TRAIL = 126;
const CYCLING = 385;
const SPORTS = [RUNNING, TRAIL, CYCLING] as const;
const DAY = 86_400_000;
const FIRST = Date.UTC(2024, 4, 1, 6);

/** Per gear: its totals as decimal text (trailing zeros trimmed) and its activity count. */
async function gearRows(users: string[]) {
  const { rows } = await sql`
    select id, trim_scale(distance)::text as distance, trim_scale(duration)::text as duration,
      trim_scale(moving_time)::text as moving_time, trim_scale(elevation_gain)::text as elevation_gain, activities
    from user_equipments where user_id = any(${users}) order by id`.execute(db);
  return rows;
}

/** The same from the activities, summed in SQL (the rule written again, independently). */
async function gearOracle(users: string[]) {
  const { rows } = await sql`
    with v as (
      select gear.id, greatest(coalesce((a.data_summaries ->> '5')::numeric, 0), 0) as distance,
        greatest(coalesce((a.data_summaries ->> '24')::numeric, a.duration), 0) as duration,
        greatest(coalesce((a.data_summaries ->> '30')::numeric, a.moving_time, 0), 0) as moving_time,
        greatest(coalesce((a.data_summaries ->> '18')::numeric, 0), 0) as elevation_gain
      from activities a cross join lateral (select distinct unnest(a.equipment_ids) as id) as gear
      where a.user_id = any(${users})
    )
    select g.id, trim_scale(coalesce(sum(v.distance), 0))::text as distance,
      trim_scale(coalesce(sum(v.duration), 0))::text as duration,
      trim_scale(coalesce(sum(v.moving_time), 0))::text as moving_time,
      trim_scale(coalesce(sum(v.elevation_gain), 0))::text as elevation_gain, count(v.id)::int as activities
    from user_equipments g left join v on v.id = g.id
    where g.user_id = any(${users}) group by g.id order by g.id`.execute(db);
  return rows;
}

/** Per challenge: its result and achievement as stored. */
async function challengeRows(users: string[]) {
  const { rows } = await sql`
    select id, trim_scale(result)::text as result, achieved_at, achieved_activity_id
    from user_challenges where user_id = any(${users}) order by id`.execute(db);
  return rows;
}

/**
 * The same from the activities: the sum over those that start in the window (of the sport), and
 * the first activity, in the order they end, at which the running sum reaches the target.
 */
async function challengeOracle(users: string[]) {
  const { rows } = await sql`
    with v as (
      select c.id as challenge, a.id as activity, a.startdate + make_interval(secs => a.duration) as ended_at,
        c.target,
        case c.target_datatype_id
          when 5 then greatest(coalesce((a.data_summaries ->> '5')::numeric, 0), 0)
          when 18 then greatest(coalesce((a.data_summaries ->> '18')::numeric, 0), 0)
          when 24 then greatest(coalesce((a.data_summaries ->> '24')::numeric, a.duration), 0)
          else 1 end as value
      from user_challenges c join activities a on a.user_id = c.user_id
        and a.startdate between c.started_at and c.ended_at and (c.sport_id is null or a.sport_id = c.sport_id)
      where c.user_id = any(${users})
    ), running as (
      select v.*, sum(v.value) over (partition by v.challenge order by v.ended_at, v.activity) as so_far from v
    ), crossing as (
      select distinct on (challenge) challenge, ended_at, activity from running
      where so_far >= target order by challenge, ended_at, activity
    )
    select c.id, trim_scale(coalesce((select sum(value) from v where v.challenge = c.id), 0))::text as result,
      x.ended_at as achieved_at, x.activity as achieved_activity_id
    from user_challenges c left join crossing x on x.challenge = c.id
    where c.user_id = any(${users}) order by c.id`.execute(db);
  return rows;
}

const value = fc.oneof(
  fc.integer({ min: 0, max: 20_000 }),
  fc.integer({ min: -1000, max: 2_000_000 }).map((n) => n / 100),
  fc.constantFrom(0.1, 0.2, 1 / 3),
);
const summaries = fc.dictionary(fc.constantFrom('5', '18', '24', '30', '4'), value, { maxKeys: 5 });
const sport = fc.constantFrom(...SPORTS);
/** Gear of the activity's user by index (0 to 3), or undefined: the auto-assigned gear. */
const gear = fc.option(fc.uniqueArray(fc.nat(3), { maxLength: 3 }), { nil: undefined });

type Op =
  | {
      kind: 'create';
      user: number;
      sport: number;
      day: number;
      duration: number;
      summaries: Record<string, number>;
      gear: number[] | undefined;
    }
  | { kind: 'sport'; activity: number; sport: number }
  | { kind: 'gear'; activity: number; gear: number[] }
  | { kind: 'distance'; activity: number; summaries: Record<string, number> }
  | { kind: 'delete'; activity: number }
  | { kind: 'target'; challenge: number; target: number | null }
  | { kind: 'recompute'; user: number }
  | { kind: 'deliver'; order: number[] };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      user: fc.nat(1),
      sport,
      day: fc.integer({ min: -3, max: 40 }),
      duration: fc.integer({ min: 0, max: 3 * 86_400 }),
      summaries,
      gear,
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('sport' as const), activity: fc.nat(), sport }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('gear' as const),
      activity: fc.nat(),
      gear: fc.uniqueArray(fc.nat(3), { maxLength: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('distance' as const), activity: fc.nat(), summaries }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), activity: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('target' as const),
      challenge: fc.nat(),
      target: fc.option(fc.integer({ min: 1, max: 30_000 }), { nil: null }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('recompute' as const), user: fc.nat(1) }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('deliver' as const), order: fc.array(fc.nat(), { maxLength: 12 }) }),
  },
);

/** A job written by a change: the activity's records job (its progress step), or a challenge's refresh. */
type Job = { kind: 'activity'; id: string; user: string } | { kind: 'challenge'; id: string; user: string };

async function run(job: Job) {
  if (job.kind === 'activity') return applyProgressNow(db, job.id, job.user);
  return db.transaction().execute(async (trx) => {
    await lockUserRecords(trx, job.user);
    return refreshChallenge(trx, job.user, job.id);
  });
}

/** Two users, each with 4 gear items (2 auto-assigned to running, one of them retired) and 3 challenges. */
async function world() {
  const users = [await insertTrackingUser(db), await insertTrackingUser(db)];
  const gearOf = new Map<string, string[]>();
  const challenges: { id: string; user: string }[] = [];
  for (const user of users) {
    const ids: string[] = [];
    for (const [i, fields] of [
      { sportsAutoAssigned: [RUNNING] },
      { sportsAutoAssigned: [RUNNING, TRAIL], retired: true },
      { sportsAutoAssigned: [TRAIL], startDate: new Date(FIRST + 10 * DAY) },
      {},
    ].entries())
      ids.push(
        (await createEquipment(db, user, { category: 'shoes', brand: 'Brand', name: `Gear ${i}`, ...fields })).id,
      );
    gearOf.set(user, ids);
    for (const c of [
      { targetDatatypeId: 5, target: 15_000, sportId: null },
      { targetDatatypeId: 98, target: 3, sportId: RUNNING },
      { targetDatatypeId: 24, target: null, sportId: null },
    ]) {
      const row = await createChallenge(db, user, {
        name: 'challenge',
        ...c,
        startedAt: new Date(FIRST),
        endedAt: new Date(FIRST + 30 * DAY),
      });
      challenges.push({ id: row.id, user });
    }
  }
  return { users, gearOf, challenges };
}

test('property: after any activity changes, in any job order, gear totals and challenges equal the direct sums', async (t) => {
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
      runs++;
      const { users, gearOf, challenges } = await world();
      const activities: { id: string; user: string; alive: boolean }[] = [];
      let pending: Job[] = challenges.map((c) => ({ kind: 'challenge', ...c }));
      const alive = () => activities.filter((a) => a.alive);
      const pick = (n: number) => alive()[n % Math.max(1, alive().length)];
      const gearIds = (user: string, picks: number[]) => picks.map((i) => gearOf.get(user)?.[i] as string);
      for (const o of ops) {
        if (o.kind === 'create') {
          const user = users[o.user] as string;
          const row = await createActivity(db, user, {
            userId: user,
            userDeviceId: null,
            connectorId: null,
            comment: null,
            userSession: null,
            images: [],
            tags: null,
            location: null,
            duplicates: 'keep',
            equipmentIds: o.gear && gearIds(user, o.gear),
            content: {
              sportId: o.sport,
              name: null,
              startdate: new Date(FIRST + o.day * DAY),
              duration: o.duration,
              summaries: new Map(Object.entries(o.summaries).map(([k, v]) => [Number(k), v])),
              datastream: emptyDatastream(),
              track: emptyTrack(),
            },
          });
          activities.push({ id: row.id, user, alive: true });
          pending.push({ kind: 'activity', id: row.id, user });
        } else if (o.kind === 'sport' || o.kind === 'gear' || o.kind === 'distance' || o.kind === 'delete') {
          const a = pick(o.activity);
          if (!a) continue;
          if (o.kind === 'delete') {
            await deleteActivity(db, a.user, a.id);
            a.alive = false;
          } else
            await updateActivity(
              db,
              a.user,
              a.id,
              o.kind === 'sport'
                ? { sportId: o.sport }
                : o.kind === 'gear'
                  ? { equipmentIds: gearIds(a.user, o.gear) }
                  : { summaries: new Map(Object.entries(o.summaries).map(([k, v]) => [Number(k), v])) },
            );
          pending.push({ kind: 'activity', id: a.id, user: a.user });
        } else if (o.kind === 'target') {
          const c = challenges[o.challenge % challenges.length] as { id: string; user: string };
          await updateChallenge(db, c.user, c.id, { target: o.target });
          pending.push({ kind: 'challenge', ...c });
        } else if (o.kind === 'recompute') {
          // records:recompute's rebuild, at once; the jobs of earlier changes may still come after.
          await rebuildProgressNow(db, users[o.user] as string);
        } else {
          for (const k of o.order) {
            const job = pending[k % Math.max(1, pending.length)];
            if (job) await run(job);
          }
          // Delivered jobs leave the list, or (an odd draw) stay to be delivered again later.
          if (o.order.length % 2 === 0) {
            const delivered = new Set(o.order.map((k) => k % Math.max(1, pending.length)));
            pending = pending.filter((_, i) => !delivered.has(i));
          }
        }
      }
      // Every job runs in the end (at least once): the figures then equal the sums.
      for (const job of pending) await run(job);
      // Thrown (not t.deepEqual) so that fast-check shrinks a failure to its smallest case.
      const expected = { gear: await gearOracle(users), challenges: await challengeOracle(users) };
      assert.deepEqual({ gear: await gearRows(users), challenges: await challengeRows(users) }, expected);
      // A rebuild from scratch finds the same.
      for (const user of users) await rebuildProgressNow(db, user);
      assert.deepEqual({ gear: await gearRows(users), challenges: await challengeRows(users) }, expected);
    }),
    { numRuns: Number(process.env.PROGRESS_PROPERTY_RUNS ?? 25) },
  );
  t.true(runs > 0);
});
