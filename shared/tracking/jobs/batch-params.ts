import type { FieldError } from '../../errors.ts';
import { parseRecomputeScope, type RecomputeScope } from '../records/recompute-scope.ts';

/**
 * A batch job's params (POST /v2/jobs, docs/tracking-records.md "Recomputing"): the options of
 * `npm run records:recompute` (`user` or `all`, `sport`, `since`, `until`), read by the same
 * parser. The job row keeps them as strings (`all=true`, `sport=121,126`), and its worker reads
 * its scope back from them.
 */

export const BATCH_JOB_TYPES = ['records_recompute', 'statistics_rebuild', 'thumbnails_rebuild'] as const;
export type BatchJobType = (typeof BATCH_JOB_TYPES)[number];

export const isBatchJobType = (type: string): type is BatchJobType =>
  (BATCH_JOB_TYPES as readonly string[]).includes(type);

/** The params as sent (the body's `params`). */
export interface BatchParamsInput {
  user?: string | undefined;
  all?: boolean | undefined;
  sport?: string | number | readonly (string | number)[] | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

/** How a 422 names an option: `params.<option>` of the body. */
const named = (option: string) => `body.params.${option}`;

/** The scope the params ask for and their stored form, or where they go wrong (`params.<option>`). */
export function parseBatchParams(
  input: BatchParamsInput,
): { scope: RecomputeScope; params: Record<string, string> } | { problems: FieldError[] } {
  const sport =
    input.sport === undefined ? undefined : (Array.isArray(input.sport) ? input.sport : [input.sport]).map(String);
  const parsed = parseRecomputeScope({ ...input, sport }, named);
  if ('problems' in parsed) return parsed;
  const { scope } = parsed;
  const params: Record<string, string> = 'userId' in scope ? { user: scope.userId } : { all: 'true' };
  if (scope.sportIds) params.sport = scope.sportIds.join(',');
  if (input.since !== undefined) params.since = input.since;
  if (input.until !== undefined) params.until = input.until;
  return { scope, params };
}

/** A stored job's scope (its params were checked when it was started). */
export function batchScopeOf(params: Record<string, string>): RecomputeScope {
  const parsed = parseRecomputeScope({
    user: params.user,
    all: params.all === 'true',
    sport: params.sport === undefined ? undefined : [params.sport],
    since: params.since,
    until: params.until,
  });
  if ('problems' in parsed)
    throw new Error(`stored params do not parse: ${parsed.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
  return parsed.scope;
}
