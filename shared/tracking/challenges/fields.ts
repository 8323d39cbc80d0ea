import { formatDateTime, formatDateTimeIn } from '../dates.ts';
import { iri, iriOrNull } from '../iri.ts';
import type { ChallengeRow } from './query.ts';

/** The members of a UserChallenge node, as /v2/user_challenges answers them (and its web hook event, and the personal-data export). */
export const challengeFields = (c: ChallengeRow) => ({
  id: c.id,
  name: c.name,
  user: iri('users', c.user_id),
  targetDatatype: iri('datatypes', c.target_datatype_id),
  startedAt: formatDateTime(c.started_at),
  endedAt: formatDateTime(c.ended_at),
  // The instant the activity that crossed the target ended, on the user's wall clock.
  achievedAt: c.achieved_at && formatDateTimeIn(c.achieved_at, c.timezone),
  target: c.target === null ? null : Number(c.target),
  result: Number(c.result),
  sport: iriOrNull('sports', c.sport_id),
  createdAt: formatDateTime(c.created_at),
  updatedAt: formatDateTime(c.updated_at),
  // Extension, after v2.26's members.
  achievedBy: iriOrNull('activities', c.achieved_activity_id),
});
