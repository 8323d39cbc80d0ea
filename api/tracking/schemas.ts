import { z } from 'zod';
import { IRI_TYPES, type IriCollection, iri, parseIntegerIri, parseIri } from '../../shared/tracking/iri.ts';

/**
 * The vocabulary every tracking resource is declared with: IRIs, dates with an offset, the
 * API Platform filter forms (`name` / `name[]`, `prop[after]`, `order[prop]`) and paging.
 */

const example = (collection: IriCollection) => iri(collection, collection === 'users' ? 'a1b2c3' : 1);

/** An IRI of `collection` in a body or query; parses to the id it names (422 otherwise). */
export function iriOf(collection: IriCollection) {
  return z
    .string()
    .transform((value, ctx) => {
      const id = parseIri(value, collection);
      if (id === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `must be the IRI of a ${IRI_TYPES[collection]}, such as ${example(collection)}`,
        });
        return z.NEVER;
      }
      return id;
    })
    .meta({ format: 'iri-reference', example: example(collection) });
}

/** An IRI of a referential with integer ids; parses to the integer. */
export function integerIriOf(collection: IriCollection) {
  return z
    .string()
    .transform((value, ctx) => {
      const id = parseIntegerIri(value, collection);
      if (id === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `must be the IRI of a ${IRI_TYPES[collection]}, such as ${example(collection)}`,
        });
        return z.NEVER;
      }
      return id;
    })
    .meta({ format: 'iri-reference', example: example(collection) });
}

/** Earliest and latest instants the service accepts (beyond, a date is surely a client bug). */
export const MIN_DATE = new Date('1900-01-01T00:00:00Z');
export const MAX_DATE = new Date('2100-01-01T00:00:00Z');

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;

/** Whether the day and hour a date-time names exist: Date rolls 02-30 over to 03-01 and takes 24:00. */
function existingDayAndHour(value: string): boolean {
  const [y, m, d, h] = [value.slice(0, 4), value.slice(5, 7), value.slice(8, 10), value.slice(11, 13)].map(Number);
  const day = new Date(Date.UTC(y as number, (m as number) - 1, d));
  return day.getUTCMonth() === (m as number) - 1 && day.getUTCDate() === d && (h as number) <= 23;
}

/** An ISO 8601 date-time with an offset (the spec's convention), 1900 to 2100; parses to a Date. */
export const dateTime = z
  .string()
  .transform((value, ctx) => {
    const date = ISO_WITH_OFFSET.test(value) && existingDayAndHour(value) ? new Date(value) : undefined;
    if (!date || Number.isNaN(date.getTime())) {
      ctx.addIssue({
        code: 'custom',
        message: 'must be an ISO 8601 date-time with an offset, such as 2024-05-01T08:30:00+02:00',
      });
      return z.NEVER;
    }
    if (date < MIN_DATE || date >= MAX_DATE) {
      ctx.addIssue({ code: 'custom', message: 'must be between 1900-01-01 and 2100-01-01' });
      return z.NEVER;
    }
    return date;
  })
  .meta({ format: 'date-time', example: '2024-05-01T08:30:00+02:00' });

/** A calendar date `YYYY-MM-DD` that exists (a birth date). */
export const calendarDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD')
  .refine((v) => {
    const d = new Date(`${v}T00:00:00Z`);
    return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(v) && d >= MIN_DATE && d < MAX_DATE;
  }, 'must be a real date between 1900-01-01 and 2100-01-01');

/** An instant as the service writes it (formatDateTime of shared/tracking/dates.ts), for response schemas. */
export const dateTimeOut = z.string().meta({ format: 'date-time', example: '2024-05-01T06:30:00+00:00' });

export const DATE_BOUNDS = ['after', 'before', 'strictly_after', 'strictly_before'] as const;
export type DateBound = (typeof DATE_BOUNDS)[number];
export type DateFilter = Partial<Record<DateBound, Date>>;

/** `prop[after]`, `prop[before]`, `prop[strictly_after]`, `prop[strictly_before]` query members. */
export function dateFilterShape<P extends string>(prop: P) {
  return Object.fromEntries(DATE_BOUNDS.map((b) => [`${prop}[${b}]`, dateTime.optional()])) as {
    [K in `${P}[${DateBound}]`]: z.ZodOptional<typeof dateTime>;
  };
}

/** The date filter of `prop` from a parsed query. */
export function dateFilterOf(query: Record<string, unknown>, prop: string): DateFilter {
  const out: DateFilter = {};
  for (const b of DATE_BOUNDS) {
    const v = query[`${prop}[${b}]`];
    if (v instanceof Date) out[b] = v;
  }
  return out;
}

/** `name` and `name[]` members: one value or several (a repeated `name` counts as several). */
export function listFilterShape<P extends string, S extends z.ZodType>(name: P, item: S) {
  const many = z.union([item.transform((v) => [v]), z.array(item).max(100)]);
  return { [name]: many.optional(), [`${name}[]`]: many.optional() } as {
    [K in P | `${P}[]`]: z.ZodOptional<typeof many>;
  };
}

/** The values of `name` and `name[]` together (undefined when neither was given). */
export function listFilterOf<T>(query: Record<string, unknown>, name: string): T[] | undefined {
  const a = query[name] as T[] | undefined;
  const b = query[`${name}[]`] as T[] | undefined;
  return a || b ? [...(a ?? []), ...(b ?? [])] : undefined;
}

const direction = z.enum(['asc', 'desc', 'ASC', 'DESC']).transform((d) => d.toLowerCase() as 'asc' | 'desc');

/** `order[prop]=asc|desc` members. */
export function orderShape<P extends string>(props: readonly P[]) {
  return Object.fromEntries(props.map((p) => [`order[${p}]`, direction.optional()])) as {
    [K in `order[${P}]`]: z.ZodOptional<typeof direction>;
  };
}

/** The requested orders, in the order the query gave them (the first one sorts first). */
export function orderOf<P extends string>(
  query: Record<string, unknown>,
  querystring: string,
  props: readonly P[],
): { prop: P; direction: 'asc' | 'desc' }[] {
  const given = [...new URLSearchParams(querystring).keys()];
  return props
    .filter((p) => query[`order[${p}]`] !== undefined)
    .sort((a, b) => given.indexOf(`order[${a}]`) - given.indexOf(`order[${b}]`))
    .map((prop) => ({ prop, direction: query[`order[${prop}]`] as 'asc' | 'desc' }));
}

/** Items per page when `limit` is not given, and the most a page may hold. */
export const DEFAULT_PAGE_SIZE = 30;
export const MAX_PAGE_SIZE = 100;
/** The deepest page (offset paging: deeper, a client should narrow its filters). */
export const MAX_PAGE = 10_000;

/** `page` (1-based) and `limit` (1 to 100, default 30). */
export const pagingShape = {
  page: z.coerce.number().int().min(1).max(MAX_PAGE).default(1),
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE),
};

const BARE_ID = /^[^/]{1,200}$/;
const looksLikeIri = (value: string) => value.startsWith('/') || /^https?:\/\//i.test(value);

/**
 * A filter value naming an object of `collection` by IRI or by its bare id (`/v2/activities/ab12`
 * or `ab12`): the spec shows a bare id in one filter (`datatype (id)`) and IRIs everywhere else,
 * so filters take both. Something shaped like an IRI must be one of `collection`.
 */
export function refOf(collection: IriCollection) {
  return z
    .string()
    .transform((value, ctx) => {
      const id = looksLikeIri(value) ? parseIri(value, collection) : BARE_ID.test(value) ? value : undefined;
      if (id === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `must be the IRI or the id of a ${IRI_TYPES[collection]}, such as ${example(collection)}`,
        });
        return z.NEVER;
      }
      return id;
    })
    .meta({ example: example(collection) });
}

/** `refOf` for a referential with integer ids (`/v2/datatypes/181` or `181`); parses to the integer. */
export function integerRefOf(collection: IriCollection) {
  return z
    .string()
    .transform((value, ctx) => {
      const id = parseIntegerIri(looksLikeIri(value) ? value : iri(collection, value), collection);
      if (id === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `must be the IRI or the integer id of a ${IRI_TYPES[collection]}, such as ${example(collection)} or 1`,
        });
        return z.NEVER;
      }
      return id;
    })
    .meta({ example: example(collection) });
}

/** Members every JSON-LD body may carry: a client sending back what it read is not refused for them. */
const JSON_LD_MEMBERS = ['@context', '@id', '@type'];

/**
 * A write body the way API Platform reads one: the resource's read-only fields (what a GET shows,
 * so a client may send back what it read) are ignored, while a member the resource does not have
 * at all is a 422 naming that member, so a misspelt field is never dropped silently. Parses to the
 * writable members that were sent.
 */
export function writeBody<S extends z.ZodRawShape>(type: string, writable: S, readOnly: readonly string[]) {
  const names = Object.keys(writable);
  const known = new Set([...names, ...readOnly, ...JSON_LD_MEMBERS]);
  const ignored = Object.fromEntries(
    [...readOnly, ...JSON_LD_MEMBERS].map((k) => [
      k,
      z.unknown().optional().meta({ description: 'read-only: ignored' }),
    ]),
  );
  return z
    .looseObject({ ...writable, ...ignored })
    .superRefine(
      (value, ctx) => {
        for (const key of Object.keys(value))
          if (!known.has(key))
            ctx.addIssue({
              code: 'custom',
              path: [key],
              message: `${type} has no such field (writable: ${names.join(', ')})`,
            });
      },
      // Also when a member has a wrong type, so one answer lists every problem.
      { when: (p) => typeof p.value === 'object' && p.value !== null && !Array.isArray(p.value) },
    )
    .transform((value) => {
      const sent: Record<string, unknown> = {};
      for (const k of names) if (value[k] !== undefined) sent[k] = value[k];
      return sent as z.output<z.ZodObject<S>>;
    });
}
