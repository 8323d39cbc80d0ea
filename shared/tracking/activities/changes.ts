import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import type { FieldError } from '../../errors.ts';
import { equipmentProblems } from '../gear/activity-gear.ts';
import { iri } from '../iri.ts';
import { emptyDatastream } from './data.ts';
import { referenceProblems, sportExists } from './references.ts';

/**
 * What a PUT of an activity names, checked (shared/tracking/activities/store.ts, updateActivity):
 * its sport, its gear (the caller's, locked until the change commits, as a create locks it) and
 * the datatypes of its summaries; each problem names its body field. The referentials are read
 * with `db` (whose known ids references.ts keeps), the gear locked in `trx`.
 */
export async function changeProblems(
  { db, trx }: { db: Kysely<Database>; trx: Kysely<Database> },
  callerId: string,
  current: { sport_id: number },
  changes: { sportId?: number; equipmentIds?: string[]; summaries?: Map<number, number> },
): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  if (
    changes.sportId !== undefined &&
    changes.sportId !== current.sport_id &&
    !(await sportExists(db, changes.sportId))
  )
    errors.push({ path: 'body.sport', message: `${iri('sports', changes.sportId)} does not exist` });
  if (changes.equipmentIds)
    errors.push(...(await equipmentProblems(trx, callerId, changes.equipmentIds, { lock: true })));
  if (changes.summaries) {
    const content = { sportId: current.sport_id, summaries: changes.summaries, datastream: emptyDatastream() };
    errors.push(
      ...(await referenceProblems(db, { content, connectorId: null })).filter((e) =>
        e.path.startsWith('body.dataSummaries'),
      ),
    );
  }
  return errors;
}

/** `available_datatypes` of a stored activity given new summaries: its channels' datatypes and the summaries', sorted. */
export async function availableDatatypesWith(
  trx: Kysely<Database>,
  activityId: string,
  summaries: Record<string, number>,
): Promise<number[]> {
  const { rows } = await sql<{ datatype_id: number }>`
    select datatype_id from activity_stream_channels where activity_id = ${activityId}`.execute(trx);
  const ids = new Set([...rows.map((r) => r.datatype_id), ...Object.keys(summaries).map(Number)]);
  return [...ids].sort((a, b) => a - b);
}
