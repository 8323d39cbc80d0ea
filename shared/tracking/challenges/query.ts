import { type Kysely, type Selectable, sql } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import type { UserChallengesTable } from '../../db/schema/progress.ts';
import { DEFAULT_TIMEZONE } from '../sumups/periods.ts';

/** A user's challenges as read (the API's answers and the `challenge_achieved` event), apart from the store that writes them. */

export type ChallengeRow = Selectable<UserChallengesTable> & { timezone: string };
/** The user's challenges, with their time zone (the records job's event reads one so too). */
export function challengesQuery(db: Kysely<Database>, callerId: string) {
  return db
    .selectFrom('user_challenges as c')
    .innerJoin('tracking_users as u', 'u.id', 'c.user_id')
    .selectAll('c')
    .select(sql<string>`coalesce(u.timezone, ${DEFAULT_TIMEZONE})`.as('timezone'))
    .where('c.user_id', '=', callerId);
}
