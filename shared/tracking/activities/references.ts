import type { Db } from '../../db/database.ts';
import type { FieldError } from '../../errors.ts';
import { iri } from '../iri.ts';
import type { ActivityContent } from './data.ts';

/**
 * The referential ids an activity names (its sport, connector and datatypes) that exist, known per
 * database once seen. Referentials are seeded and never deleted, so an id found once stays valid:
 * an activity naming only known ids costs no query. An id not seen yet is looked up every time
 * (a new referential row is found at once; nothing is remembered as missing).
 */
interface KnownIds {
  sports: Set<number>;
  connectors: Set<number>;
  datatypes: Set<number>;
}

const knownByDb = new WeakMap<Db, KnownIds>();

function knownIds(db: Db): KnownIds {
  let known = knownByDb.get(db);
  if (!known) {
    known = { sports: new Set(), connectors: new Set(), datatypes: new Set() };
    knownByDb.set(db, known);
  }
  return known;
}

/** What an activity's references are checked on. */
export interface ActivityReferences {
  content: Pick<ActivityContent, 'sportId' | 'summaries' | 'datastream'>;
  connectorId: number | null;
}

/** The references of a new activity that do not exist, each naming its body field. */
export async function referenceProblems(db: Db, refs: ActivityReferences): Promise<FieldError[]> {
  const known = knownIds(db);
  const { content } = refs;
  const datatypes = [...new Set([...content.summaries.keys(), ...content.datastream.channels.keys()])];
  const unseen = {
    sport: known.sports.has(content.sportId) ? null : content.sportId,
    connector: refs.connectorId === null || known.connectors.has(refs.connectorId) ? null : refs.connectorId,
    datatypes: datatypes.filter((id) => !known.datatypes.has(id)),
  };
  if (unseen.sport !== null || unseen.connector !== null || unseen.datatypes.length > 0) {
    const [sports, connectors, found] = await Promise.all([
      unseen.sport === null ? [] : db.selectFrom('sports').select('id').where('id', '=', unseen.sport).execute(),
      unseen.connector === null
        ? []
        : db.selectFrom('connectors').select('id').where('id', '=', unseen.connector).execute(),
      unseen.datatypes.length === 0
        ? []
        : db.selectFrom('datatypes').select('id').where('id', 'in', unseen.datatypes).execute(),
    ]);
    for (const r of sports) known.sports.add(r.id);
    for (const r of connectors) known.connectors.add(r.id);
    for (const r of found) known.datatypes.add(r.id);
  }
  const errors: FieldError[] = [];
  if (!known.sports.has(content.sportId))
    errors.push({ path: 'body.sport', message: `${iri('sports', content.sportId)} does not exist` });
  if (refs.connectorId !== null && !known.connectors.has(refs.connectorId))
    errors.push({ path: 'body.connector', message: `${iri('connectors', refs.connectorId)} does not exist` });
  for (const id of content.summaries.keys())
    if (!known.datatypes.has(id))
      errors.push({ path: `body.dataSummaries.${id}`, message: `no datatype ${iri('datatypes', id)}` });
  for (const [id, values] of content.datastream.channels) {
    if (known.datatypes.has(id)) continue;
    const at = values.findIndex((v) => !Number.isNaN(v));
    errors.push({
      path: `body.datastream.${content.datastream.elapsed[at]}.${id}`,
      message: `no datatype ${iri('datatypes', id)}`,
    });
  }
  return errors;
}

/** Whether `sportId` is a sport (for a PUT changing it); remembered like the create's references. */
export async function sportExists(db: Db, sportId: number): Promise<boolean> {
  const known = knownIds(db);
  if (known.sports.has(sportId)) return true;
  const found = await db.selectFrom('sports').select('id').where('id', '=', sportId).executeTakeFirst();
  if (found) known.sports.add(found.id);
  return found !== undefined;
}

/** The ids of `sportIds` that are no sport (a batch recompute's filter). */
export async function unknownSportIds(db: Db, sportIds: readonly number[]): Promise<number[]> {
  const known = await Promise.all(sportIds.map((id) => sportExists(db, id)));
  return sportIds.filter((_, i) => !known[i]);
}
