import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Found, PageRequest } from '../../db/paging.ts';

/**
 * `GET /v2/user_equipments/autocomplete/{parameter}/{query}`: gear brands or names starting with
 * what the user typed, from their own gear and everyone's, without saying whose. A value only
 * other users wrote is suggested once at least OTHERS_MIN_USERS of them wrote it: a name one
 * person gave their bike ("Anna's red bike") is theirs, not a suggestion.
 */

export const AUTOCOMPLETE_PARAMETERS = ['brand', 'name'] as const;
export type AutocompleteParameter = (typeof AUTOCOMPLETE_PARAMETERS)[number];

/** Distinct users who must have written a value before others are offered it. */
export const OTHERS_MIN_USERS = 2;

export interface EquipmentSuggestion {
  parameter: AutocompleteParameter;
  /** The brand or name, as written (values differing in case are distinct). */
  value: string;
  /** Whether the caller's own gear has it. */
  mine: boolean;
}

/** The largest code point: a prefix's range of strings ends before the prefix followed by it. */
const LAST_CHARACTER = String.fromCodePoint(0x10ffff);

/**
 * One page of suggestions for `query` (case-insensitive prefix), the caller's own first, then the
 * most used, then alphabetical. One statement over the prefix index of lower(brand) or lower(name).
 */
export async function suggestEquipment(
  db: Db,
  callerId: string,
  parameter: AutocompleteParameter,
  query: string,
  paging: PageRequest,
): Promise<Found<EquipmentSuggestion>> {
  const prefix = query.toLowerCase();
  const column = sql.ref(parameter);
  const { rows } = await sql<{ value: string; mine: boolean; total: string }>`
    select value, mine, count(*) over () as total from (
      select ${column} as value, bool_or(user_id = ${callerId}) as mine, count(distinct user_id) as users
      from user_equipments
      where lower(${column}) ~>=~ ${prefix} and lower(${column}) ~<~ ${prefix + LAST_CHARACTER}
      group by ${column}
      having bool_or(user_id = ${callerId}) or count(distinct user_id) >= ${OTHERS_MIN_USERS}
    ) s
    order by mine desc, users desc, value
    limit ${paging.limit} offset ${(paging.page - 1) * paging.limit}`.execute(db);
  return {
    items: rows.map((r) => ({ parameter, value: r.value, mine: r.mine })),
    total: Number(rows[0]?.total ?? 0),
  };
}
