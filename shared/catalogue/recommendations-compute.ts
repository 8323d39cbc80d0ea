import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { countryAreas } from './recommendations-countries.ts';

/** Places within this distance of a city's point count as "around" it (docs/recommendations.md). */
export const CITY_RADIUS_M = 20_000;

/** The steps of one computation, in order (the CLI's progress bar counts them). */
export const COMPUTE_STEPS = ['popularity', 'copractice', 'cities', 'countries'] as const;
export type ComputeStep = (typeof COMPUTE_STEPS)[number];

export interface ComputeResult {
  /** Rows written per table. */
  counts: Record<ComputeStep, number>;
  durationMs: number;
  computedAt: Date;
}

/**
 * People count in a pair's co-practice only when at least this many practise both sports: below
 * it, the pair's rank could tell anyone who knows one of them what else they practise
 * (docs/recommendations.md, Co-practice).
 */
export const COPRACTICE_MIN_PEOPLE = 3;

/**
 * What each sport is practised with: one row per (subject, sport) where a subject is an approved
 * place (`place`, its id) or a person (`person`, their account id) with a tracking activity of
 * that sport. A tracking user is one account (tracking_users.account_id is unique), so a person is
 * one subject however many activities they have. Accounts being deleted (scheduled or started)
 * are left out. Places and people are different subjects: a place's creator is not counted as a
 * person through it.
 */
const PRACTICE = sql`
  select distinct 'place'::text as kind, pa.place_id::text as subject, pa.sport_id
  from place_activities pa
  join places p on p.id = pa.place_id and p.status = 'approved'
  union all
  select 'person', tu.account_id::text, ua.sport_id
  from (select distinct user_id, sport_id from activities) ua
  join tracking_users tu on tu.id = ua.user_id and tu.schedule_delete is null
  where not exists (select from account_deletions d where d.account_id = tu.account_id)`;

/**
 * Recomputes every recommendation in one transaction: the previous rows are deleted and the new
 * ones inserted by a few set-based statements (all sports at once), so readers see either the
 * old or the new result, never a mix. Idempotent: the same data gives the same rows. Concurrent
 * runs (the scheduler and the CLI) queue on an advisory lock rather than interleave.
 */
export async function computeRecommendations(
  db: Db,
  onStep: (step: ComputeStep, rows: number) => void = () => {},
): Promise<ComputeResult> {
  const started = Date.now();
  const areas = countryAreas();
  const counts = await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext('sports-backend:recommendations'))`.execute(trx);
    for (const table of [
      'sport_copractice',
      'city_sport_popularity',
      'country_sport_density',
      'sport_popularity',
    ] as const)
      await trx.deleteFrom(table).execute();
    const done: Partial<Record<ComputeStep, number>> = {};
    const step = (name: ComputeStep, rows: bigint | undefined) => {
      done[name] = Number(rows ?? 0);
      onStep(name, done[name]);
    };

    // Number of approved places offering each active sport: the fallback order.
    step(
      'popularity',
      (
        await sql`
          insert into sport_popularity (sport_id, places)
          select pa.sport_id, count(*)
          from place_activities pa
          join places p on p.id = pa.place_id and p.status = 'approved'
          join sports s on s.id = pa.sport_id and s.active
          group by pa.sport_id`.execute(trx)
      ).numAffectedRows,
    );

    // For each ordered pair of different sports: the places and the people practising both,
    // people only from COPRACTICE_MIN_PEOPLE on (below it, 0 is stored, not the count).
    step(
      'copractice',
      (
        await sql`
          with practice as (${PRACTICE}),
          pairs as (
            select a.sport_id, b.sport_id as other_id,
                   count(*) filter (where a.kind = 'place') as places,
                   count(*) filter (where a.kind = 'person') as people
            from practice a
            join practice b on b.kind = a.kind and b.subject = a.subject and b.sport_id <> a.sport_id
            join sports o on o.id = b.sport_id and o.active
            group by a.sport_id, b.sport_id),
          floored as (
            select sport_id, other_id, places,
                   case when people >= ${COPRACTICE_MIN_PEOPLE} then people else 0 end as people
            from pairs)
          insert into sport_copractice (sport_id, other_id, score, places, people)
          select sport_id, other_id, places + people, places, people
          from floored
          where places + people > 0`.execute(trx)
      ).numAffectedRows,
    );

    // For each city: the approved places offering each active sport within CITY_RADIUS_M.
    step(
      'cities',
      (
        await sql`
          insert into city_sport_popularity (city_id, sport_id, places)
          select c.id, pa.sport_id, count(*)
          from place_activities pa
          join sports s on s.id = pa.sport_id and s.active
          join geo_cities c on st_dwithin(c.geom::geography, pa.place_geog, ${CITY_RADIUS_M})
          where pa.place_approved
          group by c.id, pa.sport_id`.execute(trx)
      ).numAffectedRows,
    );

    // For each country of the dataset: approved places offering each active sport per km².
    step(
      'countries',
      (
        await sql`
          with areas as (
            select * from unnest(${[...areas.keys()]}::text[], ${[...areas.values()]}::float8[]) as t(country, area_km2)
          )
          insert into country_sport_density (country, sport_id, places, area_km2, density)
          select p.country, pa.sport_id, count(*), a.area_km2, count(*) / a.area_km2
          from place_activities pa
          join places p on p.id = pa.place_id and p.status = 'approved'
          join sports s on s.id = pa.sport_id and s.active
          join areas a on a.country = p.country
          group by p.country, pa.sport_id, a.area_km2`.execute(trx)
      ).numAffectedRows,
    );

    const counts = done as Record<ComputeStep, number>;
    await sql`
      insert into recommendations_runs (id, computed_at, duration_ms, counts)
      values (true, now(), ${Date.now() - started}, ${JSON.stringify(counts)})
      on conflict (id) do update set computed_at = excluded.computed_at, duration_ms = excluded.duration_ms,
        counts = excluded.counts`.execute(trx);
    return counts;
  });
  return { counts, durationMs: Date.now() - started, computedAt: new Date() };
}
