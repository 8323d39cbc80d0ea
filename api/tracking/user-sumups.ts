import { z } from 'zod';
import { iri } from '../../shared/tracking/iri.ts';
import { isPeriodDay, SUMUP_TYPES, type SumupType } from '../../shared/tracking/sumups/periods.ts';
import {
  findSumup,
  listSumups,
  type PeriodBounds,
  SUMUP_ORDERS,
  type SumupFilter,
  type UserSumup,
} from '../../shared/tracking/sumups/read.ts';
import type { AppContext } from '../context.ts';
import type { HydraView } from '../http/formats/format.ts';
import type { ApiRouter } from '../http/route.ts';
import { type FieldsText, listText, num, orNull, str } from './list-text.ts';
import { integerRefOf, listFilterOf, orderOf, orderShape, pagingShape, refOf } from './schemas.ts';
import { trackingResource } from './tracking-resource.ts';

/** A UserSumup (docs/tracking-statistics.md): one datatype's total over one period, for one sport or all. */
export const sumupSchema = z
  .object({
    id: z.string(),
    type: z
      .enum(SUMUP_TYPES)
      .meta({ description: 'the length of the period: `week` (ISO, from Monday), `month`, `year`' }),
    user: z.string().meta({ format: 'iri-reference', example: '/v2/users/a1b2c3' }),
    sport: z
      .string()
      .nullable()
      .meta({ format: 'iri-reference', example: '/v2/sports/121', description: 'null: every sport' }),
    datatype: z.string().meta({ format: 'iri-reference', example: '/v2/datatypes/5' }),
    period: z.string().meta({
      format: 'date',
      example: '2026-03-01',
      description: "the period's first day in the user's time zone (`timezone` of the User; UTC when unset)",
    }),
    value: z.number().meta({ description: "the sum, in the datatype's unit (98, Activity number: the count)" }),
    createdAt: z.string().meta({ format: 'date-time' }),
    updatedAt: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'UserSumup' });

export const sumupView: HydraView<UserSumup, typeof sumupSchema> = {
  type: 'UserSumup',
  path: '/v2/user_sumups',
  id: (s) => s.id,
  fields: (s) => ({
    id: s.id,
    type: s.type,
    user: iri('users', s.user_id),
    sport: s.sport_id === null ? null : iri('sports', s.sport_id),
    datatype: iri('datatypes', s.datatype_id),
    period: s.period,
    value: Number(s.value),
    createdAt: s.created_at,
    updatedAt: s.updated_at,
  }),
};

/** sumupView's fields written as JSON text (api/tracking/list-text.ts). */
export const sumupFields: FieldsText<UserSumup> = (s) =>
  `{"id":${str(s.id)},"type":${str(s.type)},"user":${str(iri('users', s.user_id))},"sport":${orNull(s.sport_id, (id) => str(iri('sports', id)))},"datatype":${str(iri('datatypes', s.datatype_id))},"period":${str(s.period)},"value":${num(Number(s.value))},"createdAt":${str(s.created_at)},"updatedAt":${str(s.updated_at)}}`;

const DAY_MESSAGE = 'must be a date YYYY-MM-DD (a period is named by its first day), from 1900 to 2099';
const periodDay = z.string().refine(isPeriodDay, DAY_MESSAGE).meta({ format: 'date', example: '2026-03-01' });

/** API Platform's range filter spelling: `first..last`, both included. */
const periodBetween = z
  .string()
  .transform((value, ctx) => {
    const [first, last, ...rest] = value.split('..');
    if (first === undefined || last === undefined || rest.length > 0 || !isPeriodDay(first) || !isPeriodDay(last)) {
      ctx.addIssue({
        code: 'custom',
        message: `must be two dates YYYY-MM-DD..YYYY-MM-DD, such as 2026-01-01..2026-12-31`,
      });
      return z.NEVER;
    }
    if (first > last) {
      ctx.addIssue({ code: 'custom', message: `${first} is after ${last}` });
      return z.NEVER;
    }
    return [first, last] as [string, string];
  })
  .meta({ example: '2026-01-01..2026-12-31' });

const existence = z
  .enum(['true', 'false', '1', '0'], { error: 'must be true or false (1 or 0)' })
  .transform((v) => v === 'true' || v === '1')
  .meta({ description: 'false: the every-sport rows (sport null); true: the per-sport rows' });

/**
 * `name` and `name[]`, one value or several, like listFilterShape (schemas.ts), but a bad value's
 * own message is the answer's (a union of the two forms would only say "Invalid input").
 */
function filterShape<P extends string, T>(
  name: P,
  item: z.ZodType<T, string>,
  doc: { example: string; description: string; values?: readonly string[] },
) {
  // The values are checked in the transform (for their own messages): /openapi.json still lists
  // them as an enum, so generated clients type them.
  const { values, ...meta } = doc;
  const one = { type: 'string' as const, enum: [...(values ?? [])] };
  const override = values ? { anyOf: [one, { type: 'array' as const, maxItems: 100, items: one }] } : undefined;
  const many = z
    .union([z.string(), z.array(z.string()).max(100)])
    .transform((value, ctx) => {
      const out: T[] = [];
      for (const v of Array.isArray(value) ? value : [value]) {
        const parsed = item.safeParse(v);
        if (parsed.success) out.push(parsed.data);
        else for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', message: issue.message });
      }
      return out;
    })
    .meta(override ? { ...meta, override } : meta);
  return { [name]: many.optional(), [`${name}[]`]: many.optional() } as {
    [K in P | `${P}[]`]: z.ZodOptional<typeof many>;
  };
}

const sumupType = z.enum(SUMUP_TYPES, { error: 'must be week, month or year' });

export const listQuery = z.object({
  ...filterShape('type', sumupType, {
    example: 'month',
    description: '`week`, `month` or `year`',
    values: SUMUP_TYPES,
  }),
  ...filterShape('period', periodDay, { example: '2026-03-01', description: 'periods by their first day, YYYY-MM-DD' }),
  'period[between]': periodBetween.optional(),
  'period[gt]': periodDay.optional(),
  'period[gte]': periodDay.optional(),
  'period[lt]': periodDay.optional(),
  'period[lte]': periodDay.optional(),
  ...filterShape('sport', integerRefOf('sports'), { example: '/v2/sports/121', description: 'sport IRIs or ids' }),
  'exists[sport]': existence.optional(),
  ...filterShape('datatype', integerRefOf('datatypes'), {
    example: '/v2/datatypes/5',
    description: 'IRIs or ids of cumulable datatypes (98: the activity count); another datatype is a 422',
  }),
  ...filterShape('user', refOf('users'), {
    example: '/v2/users/a1b2c3',
    description: 'user IRIs or ids: only the caller has any',
  }),
  ...orderShape(SUMUP_ORDERS),
  ...pagingShape,
});

/** The list's filter from its parsed query. */
export function sumupFilterOf(query: z.output<typeof listQuery>, querystring: string): SumupFilter {
  const period: PeriodBounds = {};
  if (query['period[between]']) period.between = query['period[between]'];
  for (const bound of ['gt', 'gte', 'lt', 'lte'] as const) {
    const value = query[`period[${bound}]`];
    if (value !== undefined) period[bound] = value;
  }
  const hasSport = query['exists[sport]'];
  return {
    users: listFilterOf<string>(query, 'user'),
    types: listFilterOf<SumupType>(query, 'type'),
    periods: listFilterOf<string>(query, 'period'),
    period,
    sports: listFilterOf<number>(query, 'sport'),
    ...(hasSport !== undefined ? { hasSport } : {}),
    datatypes: listFilterOf<number>(query, 'datatype'),
    order: orderOf(query, querystring, SUMUP_ORDERS),
  };
}

const LIST_DESCRIPTION = [
  "Only the caller's statistics: per week (ISO, from Monday), month and year, cut in the caller's `timezone` (UTC when unset), the sum of each cumulable datatype of their activities, per sport and for every sport (`sport` null), with the activity count as datatype 98. Kept by the records workers a moment after each activity change (docs/tracking-statistics.md).",
  'Filters, values ORed within a filter and ANDed across filters: `type` (`week`, `month`, `year`), `period` (first days `YYYY-MM-DD`), `period[between]=YYYY-MM-DD..YYYY-MM-DD` (both included), `period[gt|gte|lt|lte]=YYYY-MM-DD` (on the first day of the period), `sport` (IRIs or ids), `exists[sport]=false` (only the every-sport rows) or `true`, `datatype` (IRIs or ids of cumulable datatypes; another datatype is a 422), `user` (only the caller has any). Each takes the scalar or the `name[]` form.',
  '`order[period|id|datatype.id]=asc|desc` (default: period ascending, then type, every sport first, datatype, id). Paging: `page`, `limit` (default 30, at most 100).',
  'Year by month, every sport, distance: `?type=month&period[between]=2026-01-01..2026-12-01&exists[sport]=false&datatype=/v2/datatypes/5`.',
].join('\n\n');

/** /v2/user_sumups: the caller's statistics by period, read only (the records job keeps them). */
export function userSumupsResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  trackingResource(router, app, {
    path: '/user_sumups',
    item: sumupSchema,
    hydra: sumupView,
    notFound: 'No such user sumup (or not yours)',
  })
    .list({
      summary: "The caller's statistics by period",
      description: LIST_DESCRIPTION,
      query: listQuery,
      representations: listText(app, sumupView, Object.keys(listQuery.shape), sumupFields),
      handler: async ({ query, ctx, caller: user, principal }) => {
        const found = await app.reads.read(principal.accountId, ({ db }) =>
          listSumups(db, user.id, sumupFilterOf(query, ctx.querystring), query),
        );
        return { ...found, page: query.page, limit: query.limit };
      },
    })
    .get({
      summary: 'One statistic of the caller',
      handler: async ({ params, caller }) => findSumup(db, caller.id, params.id),
    });
}
