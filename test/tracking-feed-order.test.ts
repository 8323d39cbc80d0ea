import test from 'ava';
import fc from 'fast-check';
import { sql } from 'kysely';
import { decodeCursor } from '../shared/tracking/sharing/cursor.ts';
import { feedActivities } from '../shared/tracking/sharing/shared-activities.ts';
import { createTestDatabase } from './helpers/db.ts';

// The feed's statement (shared/tracking/sharing/shared-activities.ts) bounds its page by the
// owners' newest activities: whatever the owners, their histories, ties of start dates, private
// activities and the page size, paging through it by cursor gives exactly the plain query's
// order (every shown activity of the owners, start descending, id descending), each once.

const database = await createTestDatabase();
test.after.always(() => database.drop());
const { db } = database;

const OWNERS = 12;
let owners: string[] = [];
test.before(async () => {
  await sql`
    insert into accounts (email) select format('feed-order-%s@example.test', g) from generate_series(1, ${OWNERS}::int) g`.execute(
    db,
  );
  await sql`insert into tracking_users (id, account_id) select ldid, id from accounts`.execute(db);
  owners = (await db.selectFrom('tracking_users').select('id').orderBy('id').execute()).map((r) => r.id);
});

/** One owner's activities: start days (few, so that starts tie) and visibilities. */
const histories = fc.array(
  fc.array(
    fc.record({ day: fc.integer({ min: 0, max: 6 }), visibility: fc.constantFrom('private', 'followers', 'public') }),
    {
      maxLength: 15,
    },
  ),
  { minLength: OWNERS, maxLength: OWNERS },
);

test('paging through the feed gives the plain query’s order, every activity once', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      histories,
      fc.integer({ min: 1, max: 8 }),
      fc.integer({ min: 1, max: OWNERS }),
      async (made, limit, followed) => {
        await db.deleteFrom('activities').execute();
        const rows = made.flatMap((activities, o) =>
          activities.map((a, k) => ({
            id: `a${o.toString().padStart(2, '0')}${k.toString().padStart(2, '0')}x${Math.random().toString(36).slice(2, 8)}`,
            user_id: owners[o] as string,
            sport_id: 121,
            startdate: new Date(Date.UTC(2024, 0, 1 + a.day, 8)),
            duration: 60,
            manual: true,
            data_summaries: '{}',
            location: 'null',
            // Starts tie on purpose: not duplicates (migration 0057's unique keys).
            kept_duplicate: true,
            visibility: a.visibility,
          })),
        );
        if (rows.length) await db.insertInto('activities').values(rows).execute();
        const ids = owners.slice(0, followed);
        const expected = rows
          .filter((r) => ids.includes(r.user_id) && r.visibility !== 'private')
          .sort((x, y) => y.startdate.getTime() - x.startdate.getTime() || (x.id < y.id ? 1 : -1))
          .map((r) => r.id);
        const seen: string[] = [];
        let cursor: string | undefined;
        for (let pages = 0; pages <= rows.length + 1; pages++) {
          const page = await feedActivities(db, ids, cursor ? decodeCursor(cursor) : undefined, limit);
          seen.push(...page.items.map((r) => r.id));
          if (page.items.length > limit) throw new Error(`${page.items.length} items on a page of ${limit}`);
          cursor = page.next;
          if (!cursor) break;
        }
        // A throw (not an assertion) makes fast-check shrink the case.
        if (JSON.stringify(seen) !== JSON.stringify(expected))
          throw new Error(`feed ${JSON.stringify(seen)} ≠ plain order ${JSON.stringify(expected)}`);
      },
    ),
    { numRuns: 60 },
  );
  t.pass();
});
