import assert from 'node:assert/strict';
import test from 'ava';
import fc from 'fast-check';
import { contributionOf } from '../shared/tracking/sumups/contribution.ts';
import { isPeriodDay, periodStarts } from '../shared/tracking/sumups/periods.ts';
import { canonicalTimezone, timezoneProblem } from '../shared/tracking/users/timezone.ts';
import { createTestDatabase } from './helpers/db.ts';
import { insertTrackingUser } from './helpers/records.ts';
import {
  applyNow,
  changeRawActivity,
  insertRawActivity,
  oracleRows,
  rebuildNow,
  rollupRows,
} from './helpers/sumups.ts';

const database = await createTestDatabase();
const { db } = database;
test.after.always(() => database.drop());

const RUNNING = 121;
const TRAIL = 126;
const CYCLING = 385;
const HIKING = 168;

test('periods: ISO weeks from Monday, months and years, on the local day of the zone', (t) => {
  // Sunday 23:30 UTC is Monday 01:30 in Paris (summer time): the next week there.
  t.deepEqual(periodStarts(new Date('2024-03-31T23:30:00Z'), 'UTC'), {
    week: '2024-03-25',
    month: '2024-03-01',
    year: '2024-01-01',
  });
  t.deepEqual(periodStarts(new Date('2024-03-31T23:30:00Z'), 'Europe/Paris'), {
    week: '2024-04-01',
    month: '2024-04-01',
    year: '2024-01-01',
  });
  // New Year's Day 03:00 UTC is still the 31st in New York: the last week, month and year before.
  t.deepEqual(periodStarts(new Date('2024-01-01T03:00:00Z'), 'America/New_York'), {
    week: '2023-12-25',
    month: '2023-12-01',
    year: '2023-01-01',
  });
  // 1 January 2021 is a Friday: its ISO week began on Monday 28 December 2020.
  t.is(periodStarts(new Date('2021-01-01T12:00:00Z'), 'UTC').week, '2020-12-28');
  // UTC+13:45 (Chatham, summer) and UTC-11 (Pago Pago) on the same instant: two days apart.
  t.is(periodStarts(new Date('2024-12-31T11:00:00Z'), 'Pacific/Chatham').year, '2025-01-01');
  t.is(periodStarts(new Date('2024-12-31T11:00:00Z'), 'Pacific/Pago_Pago').month, '2024-12-01');
  t.true(isPeriodDay('2024-02-29'));
  t.false(isPeriodDay('2023-02-29'));
  t.false(isPeriodDay('2024-2-01'));
  t.false(isPeriodDay('2024-03-01T00:00:00Z'));
});

test('timezone: IANA names in any case are kept in their canonical spelling; offsets and unknown names are refused', (t) => {
  t.is(canonicalTimezone('Europe/Paris'), 'Europe/Paris');
  t.is(canonicalTimezone('europe/paris'), 'Europe/Paris');
  t.is(canonicalTimezone('Etc/UTC'), 'UTC');
  t.is(canonicalTimezone('US/Eastern'), 'America/New_York');
  for (const bad of ['Europe/Pariss', '+01:00', 'UTC+1', 'Z', '', 'Mars/Olympus_Mons', 'a'.repeat(65), '../etc/passwd'])
    t.is(canonicalTimezone(bad), undefined, bad);
  t.regex(timezoneProblem('Europe/Pariss') ?? '', /"Europe\/Pariss" is not an IANA time zone name/);
  t.is(timezoneProblem('Asia/Kathmandu'), undefined);
});

test('contribution: 98 counts 1 whatever the summaries say, 24 falls back on the duration, only what it is given adds', (t) => {
  const c = contributionOf(
    {
      sportId: RUNNING,
      startdate: new Date('2024-05-01T08:00:00Z'),
      duration: 3600,
      movingTime: null,
      summaries: { '5': '10.5', '98': '7' },
    },
    'UTC',
  );
  t.deepEqual(c.values, [
    [5, '10.5'],
    [24, '3600'],
    [98, '1'],
  ]);
  const withDuration = contributionOf(
    {
      sportId: RUNNING,
      startdate: new Date('2024-05-01T08:00:00Z'),
      duration: 3600,
      movingTime: null,
      summaries: { '24': '3500.25' },
    },
    'UTC',
  );
  t.deepEqual(withDuration.values, [
    [24, '3500.25'],
    [98, '1'],
  ]);
});

test('moving time: the computed one counts as 30 (Active time), unless the client sent a 30, which wins', (t) => {
  const base = { sportId: RUNNING, startdate: new Date('2024-05-01T08:00:00Z'), duration: 3600 };
  t.deepEqual(contributionOf({ ...base, movingTime: 3300, summaries: {} }, 'UTC').values, [
    [24, '3600'],
    [30, '3300'],
    [98, '1'],
  ]);
  t.deepEqual(contributionOf({ ...base, movingTime: 3300, summaries: { '30': '3000' } }, 'UTC').values, [
    [24, '3600'],
    [30, '3000'],
    [98, '1'],
  ]);
});

test('apply: create, sport change, a change of values, a second delivery, delete; rows go when no activity adds to them', async (t) => {
  const user = await insertTrackingUser(db);
  const id = await insertRawActivity(db, {
    userId: user,
    sportId: RUNNING,
    startdate: new Date('2024-05-01T08:00:00Z'),
    duration: 1800,
    // 4 (heart rate average) is not cumulable: left out.
    summaries: { '5': 5000.1, '4': 150, '18': 42 },
  });
  t.is(await applyNow(db, id, user), 'added');
  t.is(await applyNow(db, id, user), 'unchanged', 'a job delivered twice adds nothing');
  const rows = await rollupRows(db, [user]);
  t.deepEqual(
    rows.filter((r) => r.type === 'month').map((r) => [r.sport_id, r.datatype_id, r.value, r.activities]),
    [
      [null, 5, '5000.1', 1],
      [null, 18, '42', 1],
      [null, 24, '1800', 1],
      [null, 98, '1', 1],
      [RUNNING, 5, '5000.1', 1],
      [RUNNING, 18, '42', 1],
      [RUNNING, 24, '1800', 1],
      [RUNNING, 98, '1', 1],
    ],
  );
  t.deepEqual(rows, await oracleRows(db, [user]));

  const other = await insertRawActivity(db, {
    userId: user,
    sportId: RUNNING,
    startdate: new Date('2024-05-02T08:00:00Z'),
    duration: 600,
    summaries: { '5': 0.2 },
  });
  await applyNow(db, other, user);
  await changeRawActivity(db, id, { sportId: CYCLING });
  t.is(await applyNow(db, id, user), 'changed');
  await changeRawActivity(db, other, { summaries: { '5': 0.1, '23': 12 } });
  t.is(await applyNow(db, other, user), 'changed');
  const after = await rollupRows(db, [user]);
  t.deepEqual(after, await oracleRows(db, [user]));
  const month = (sport: number | null, datatype: number) =>
    after.find((r) => r.type === 'month' && r.sport_id === sport && r.datatype_id === datatype);
  t.is(month(null, 5)?.value, '5000.2', 'exact: 5000.1 + 0.1, no binary rounding');
  t.is(month(RUNNING, 18), undefined, 'the running ascent went with the sport change');
  t.like(month(CYCLING, 18), { value: '42', activities: 1 });

  await db.deleteFrom('activities').where('id', 'in', [id, other]).execute();
  t.is(await applyNow(db, id, user), 'removed');
  t.is(await applyNow(db, id, user), 'none', 'a delete delivered twice');
  await applyNow(db, other, user);
  t.deepEqual(await rollupRows(db, [user]), []);
  const states = await db
    .selectFrom('activity_sumup_state')
    .select('activity_id')
    .where('user_id', '=', user)
    .execute();
  t.deepEqual(states, []);
});

/** Zones with odd offsets, both hemispheres' summer times, the date line on both sides, and abolished DST. */
const ZONES = [
  null,
  'UTC',
  'Europe/Paris',
  'Europe/London',
  'America/New_York',
  'America/St_Johns',
  'America/Sao_Paulo',
  'Australia/Sydney',
  'Asia/Kathmandu',
  'Asia/Tokyo',
  'Pacific/Chatham',
  'Pacific/Kiritimati',
  'Pacific/Pago_Pago',
] as const;

/** Days where the periods' edges and the clocks' changes are: starts are drawn within 36 hours of them. */
const PIVOTS = [
  '2023-12-31', // a Sunday, last day of a year
  '2024-03-10', // United States: clocks forward
  '2024-03-31', // Europe: clocks forward, a Sunday and the last day of a month
  '2024-04-07', // Sydney: clocks back
  '2024-10-06', // Sydney: clocks forward
  '2024-10-27', // Europe: clocks back
  '2024-11-03', // United States: clocks back
  '2024-12-29', // a Sunday whose ISO week ends in the next year
  '2025-03-30',
  '2025-10-26',
].map((d) => Date.parse(`${d}T12:00:00Z`));

const startdate = fc.oneof(
  fc
    .tuple(fc.constantFrom(...PIVOTS), fc.integer({ min: -36 * 3600, max: 36 * 3600 }))
    .map(([pivot, s]) => new Date(pivot + s * 1000)),
  fc
    .integer({ min: Date.parse('2022-01-01T00:00:00Z'), max: Date.parse('2026-12-31T00:00:00Z') })
    .map((ms) => new Date(ms)),
);

const value = fc.oneof(
  fc.integer({ min: 0, max: 100_000 }),
  fc.integer({ min: -1e6, max: 1e6 }).map((n) => n / 100),
  fc.double({ min: -1e7, max: 1e7, noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0.1, 0.2, 0.3, 1 / 3, 5e-324, 2 ** 53),
);
// Cumulable (5, 18, 19, 23, 24, 29), not cumulable (4, 9), and 98 (the count: its summary is ignored).
const summaries = fc.dictionary(fc.constantFrom('5', '18', '19', '23', '24', '29', '4', '9', '98'), value, {
  maxKeys: 6,
});
const sport = fc.constantFrom(RUNNING, TRAIL, CYCLING, HIKING);

type Op =
  | {
      kind: 'create';
      user: number;
      sport: number;
      startdate: Date;
      duration: number;
      summaries: Record<string, number>;
    }
  | { kind: 'sport'; activity: number; sport: number }
  | { kind: 'values'; activity: number; summaries: Record<string, number> }
  | { kind: 'delete'; activity: number }
  | { kind: 'timezone'; user: number; zone: (typeof ZONES)[number] }
  | { kind: 'deliver'; order: number[] };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      user: fc.nat(2),
      sport,
      startdate,
      duration: fc.nat(86_400),
      summaries,
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('sport' as const), activity: fc.nat(), sport }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('values' as const), activity: fc.nat(), summaries }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), activity: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('timezone' as const), user: fc.nat(2), zone: fc.constantFrom(...ZONES) }),
  },
  // The pending jobs delivered in any order, some twice, some not yet.
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('deliver' as const), order: fc.array(fc.nat(), { maxLength: 12 }) }),
  },
);

test('property: after any creates, sport and value changes, deletes and zone changes, every statistic equals the SQL sum of the activities', async (t) => {
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.tuple(fc.constantFrom(...ZONES), fc.constantFrom(...ZONES), fc.constantFrom(...ZONES)),
      fc.array(op, { minLength: 1, maxLength: 25 }),
      async (zones, ops) => {
        runs++;
        const users = [await insertTrackingUser(db), await insertTrackingUser(db), await insertTrackingUser(db)];
        for (const [i, zone] of zones.entries())
          await db
            .updateTable('tracking_users')
            .set({ timezone: zone })
            .where('id', '=', users[i] as string)
            .execute();
        const activities: { id: string; user: string; alive: boolean }[] = [];
        // Jobs written by the changes and not delivered yet (the records job of each change).
        let pending: { id: string; user: string }[] = [];
        const alive = () => activities.filter((a) => a.alive);
        for (const o of ops) {
          if (o.kind === 'create') {
            const user = users[o.user] as string;
            const id = await insertRawActivity(db, {
              userId: user,
              sportId: o.sport,
              startdate: o.startdate,
              duration: o.duration,
              summaries: o.summaries,
            });
            activities.push({ id, user, alive: true });
            pending.push({ id, user });
          } else if (o.kind === 'sport' || o.kind === 'values' || o.kind === 'delete') {
            const list = alive();
            const a = list[o.activity % Math.max(1, list.length)];
            if (!a) continue;
            if (o.kind === 'delete') {
              await db.deleteFrom('activities').where('id', '=', a.id).execute();
              a.alive = false;
            } else
              await changeRawActivity(db, a.id, o.kind === 'sport' ? { sportId: o.sport } : { summaries: o.summaries });
            pending.push({ id: a.id, user: a.user });
          } else if (o.kind === 'timezone') {
            const user = users[o.user] as string;
            await db.updateTable('tracking_users').set({ timezone: o.zone }).where('id', '=', user).execute();
            // The rebuild job, run at once here; its activities' own jobs may still come after.
            await rebuildNow(db, user);
          } else {
            for (const k of o.order) {
              const job = pending[k % Math.max(1, pending.length)];
              if (job) await applyNow(db, job.id, job.user);
            }
            // Delivered jobs leave the list, or (an odd draw) stay to be delivered again later.
            if (o.order.length % 2 === 0) {
              const delivered = new Set(o.order.map((k) => k % Math.max(1, pending.length)));
              pending = pending.filter((_, i) => !delivered.has(i));
            }
          }
        }
        // Every job is delivered in the end (at least once): the rollup then equals the sums.
        for (const job of pending) await applyNow(db, job.id, job.user);
        // Thrown (not t.deepEqual) so that fast-check shrinks a failure to its smallest case.
        const expected = await oracleRows(db, users);
        assert.deepEqual(await rollupRows(db, users), expected);
        // A rebuild from scratch finds the same rows.
        for (const user of users) await rebuildNow(db, user);
        assert.deepEqual(await rollupRows(db, users), expected);
      },
    ),
    { numRuns: Number(process.env.SUMUPS_PROPERTY_RUNS ?? 30) },
  );
  t.true(runs > 0);
});

test('apply reads the activity as it is now: jobs of one activity in any order end in the same rows', async (t) => {
  const user = await insertTrackingUser(db);
  await db.updateTable('tracking_users').set({ timezone: 'Australia/Sydney' }).where('id', '=', user).execute();
  const id = await insertRawActivity(db, {
    userId: user,
    sportId: RUNNING,
    // 2024-04-06T14:30Z is 01:30 on Sunday 7 April in Sydney, the night its clocks go back.
    startdate: new Date('2024-04-06T14:30:00Z'),
    duration: 100,
    summaries: { '5': 1 },
  });
  await changeRawActivity(db, id, { sportId: TRAIL });
  // The job of the second version runs first; the first version's job then finds nothing to change.
  t.is(await applyNow(db, id, user), 'added');
  t.is(await applyNow(db, id, user), 'unchanged');
  const rows = await rollupRows(db, [user]);
  t.deepEqual(rows, await oracleRows(db, [user]));
  t.true(rows.some((r) => r.type === 'week' && r.period === '2024-04-01' && r.sport_id === TRAIL));
});
