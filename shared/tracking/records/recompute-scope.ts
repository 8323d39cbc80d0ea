import type { FieldError } from '../../errors.ts';

/**
 * What a batch recompute works on (docs/tracking-records.md, "Recomputing"): one user's
 * activities or everyone's, narrowed to some sports and a span of start dates. The command
 * (`npm run records:recompute`) and the staff job (`records_recompute`, /v2/jobs) take the same
 * options through `parseRecomputeScope`.
 */

/** Filters on the activities in scope; absent members do not filter. */
export interface RecomputeFilters {
  /** Only activities of these sports. */
  sportIds?: number[];
  /** Only activities starting at or after this instant. */
  since?: Date;
  /** Only activities starting before this instant. */
  until?: Date;
}

export type RecomputeScope = ({ userId: string } | { all: true }) & RecomputeFilters;

/** The options as given (strings, from the command line or a job's params). */
export interface RawRecomputeScope {
  user?: string | undefined;
  all?: boolean | undefined;
  sport?: readonly string[] | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

const USER_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** A day (`2024-01-31`, midnight UTC) or an instant with its offset (`2024-01-31T06:00:00+01:00`). */
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;
/** Sport ids: a few hundred exist; a longer list is a mistake. */
const MAX_SPORTS = 100;

function dateOf(value: string): Date | undefined {
  if (!DAY.test(value) && !INSTANT.test(value)) return undefined;
  const date = new Date(DAY.test(value) ? `${value}T00:00:00Z` : value);
  const year = date.getUTCFullYear();
  return Number.isNaN(date.getTime()) || year < 1900 || year >= 2100 ? undefined : date;
}

/** Where each option goes wrong, named as `--name` (the command) or as the caller prefixes it. */
export function parseRecomputeScope(
  raw: RawRecomputeScope,
  name: (option: string) => string = (o) => `--${o}`,
): { scope: RecomputeScope } | { problems: FieldError[] } {
  const problems: FieldError[] = [];
  const problem = (option: string, message: string) => problems.push({ path: name(option), message });
  if ((raw.user === undefined) === !raw.all) problem('user', `give either ${name('user')} or ${name('all')}`);
  if (raw.user !== undefined && !USER_ID.test(raw.user)) problem('user', `not a user id: ${raw.user}`);
  const filters: RecomputeFilters = {};
  if (raw.sport !== undefined) {
    const ids = raw.sport.flatMap((s) => s.split(',')).map((s) => s.trim().replace(/^\/v2\/sports\//, ''));
    const bad = ids.filter((s) => !/^[1-9]\d{0,8}$/.test(s));
    if (bad.length > 0 || ids.length === 0) problem('sport', `not a sport id: ${bad.join(', ') || '(none)'}`);
    else if (ids.length > MAX_SPORTS) problem('sport', `at most ${MAX_SPORTS} sports`);
    else filters.sportIds = [...new Set(ids.map(Number))].sort((a, b) => a - b);
  }
  for (const option of ['since', 'until'] as const) {
    const value = raw[option];
    if (value === undefined) continue;
    const date = dateOf(value);
    if (date) filters[option] = date;
    else problem(option, `not a date (YYYY-MM-DD, or an ISO 8601 instant with its offset, 1900 to 2099): ${value}`);
  }
  if (filters.since && filters.until && filters.since >= filters.until)
    problem('until', `must come after ${name('since')}`);
  if (problems.length > 0) return { problems };
  const who = raw.user === undefined ? { all: true as const } : { userId: raw.user };
  return { scope: { ...who, ...filters } };
}

/** The scope's filters in words, for summaries and logs (`sports 121, 381, from 2024-01-01`). */
export function describeFilters(scope: RecomputeFilters): string {
  const parts = [
    ...(scope.sportIds ? [`sports ${scope.sportIds.join(', ')}`] : []),
    ...(scope.since ? [`from ${scope.since.toISOString()}`] : []),
    ...(scope.until ? [`before ${scope.until.toISOString()}`] : []),
  ];
  return parts.join(', ');
}

export const hasFilters = (scope: RecomputeFilters) =>
  scope.sportIds !== undefined || scope.since !== undefined || scope.until !== undefined;
