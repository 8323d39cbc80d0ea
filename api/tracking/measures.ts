import { z } from 'zod';
import { iri } from '../../shared/tracking/iri.ts';
import { measureFields as measureNode } from '../../shared/tracking/measures/measure-fields.ts';
import {
  createMeasure,
  deleteMeasure,
  findMeasure,
  listMeasures,
  MAX_MEASURE_MAGNITUDE,
  MEASURE_ORDERS,
  type Measure,
  updateMeasure,
} from '../../shared/tracking/measures/store.ts';
import type { AppContext } from '../context.ts';
import type { HydraView } from '../http/formats/format.ts';
import type { ApiRouter } from '../http/route.ts';
import {
  dateFilterOf,
  dateFilterShape,
  dateTime,
  integerIriOf,
  integerRefOf,
  iriOf,
  listFilterOf,
  listFilterShape,
  orderOf,
  orderShape,
  pagingShape,
  refOf,
  writeBody,
} from './schemas.ts';
import { trackingResource } from './tracking-resource.ts';

/** A UserMeasure as every read and write answers it (docs/tracking-measures-records-upload.md). */
const measureSchema = z
  .object({
    id: z.string(),
    user: z.string().meta({ format: 'iri-reference', example: '/v2/users/a1b2c3' }),
    datatype: z.string().meta({ format: 'iri-reference', example: '/v2/datatypes/181' }),
    value: z.number().meta({ description: "in the datatype's unit (181, body weight: grams)" }),
    date: z.string().meta({ format: 'date-time' }),
    createdAt: z.string().meta({ format: 'date-time' }),
    updatedAt: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'UserMeasure' });

const measureView: HydraView<Measure, typeof measureSchema> = {
  type: 'UserMeasure',
  path: '/v2/user_measures',
  id: (m) => m.id,
  fields: measureNode,
};

const value = z
  .number()
  .min(-MAX_MEASURE_MAGNITUDE)
  .max(MAX_MEASURE_MAGNITUDE)
  .meta({ description: "in the datatype's unit; finite, not negative for units that cannot be" });

const measureFields = {
  user: iriOf('users').meta({ description: "the caller's own user IRI" }),
  datatype: integerIriOf('datatypes'),
  value,
  date: dateTime,
};

const createBody = writeBody('UserMeasure', measureFields, ['id', 'createdAt', 'updatedAt']);
const updateBody = writeBody('UserMeasure', z.object(measureFields).partial().shape, [
  'id',
  'createdAt',
  'updatedAt',
]).refine((b) => b.user !== undefined || b.datatype !== undefined || b.value !== undefined || b.date !== undefined, {
  message: 'send at least one of user, datatype, value, date',
});

const listQuery = z.object({
  ...listFilterShape('datatype', integerRefOf('datatypes')),
  ...listFilterShape('user', refOf('users')),
  ...dateFilterShape('date'),
  ...dateFilterShape('updatedAt'),
  ...orderShape(MEASURE_ORDERS),
  ...pagingShape,
});

/** /v2/user_measures: the caller's body measures (create, list, read, update, delete). */
export function measuresResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  trackingResource(router, app, {
    path: '/user_measures',
    item: measureSchema,
    hydra: measureView,
    notFound: 'No such user measure (or not yours)',
  })
    .list({
      summary: "The caller's measures",
      description:
        "Only the caller's measures. `datatype` / `datatype[]` take IRIs or bare ids; `date[after|before|strictly_after|strictly_before]` bound the date, `updatedAt[...]` the last change (syncing: docs/tracking-sync.md); `order[date|id|createdAt|updatedAt]=asc|desc` (default: date ascending; ties by id). Paging: `page`, `limit` (default 30, at most 100).",
      query: listQuery,
      handler: async ({ query, ctx, caller: user, principal }) => {
        const found = await app.reads.read(principal.accountId, ({ db }) =>
          listMeasures(
            db,
            user.id,
            {
              datatypes: listFilterOf<number>(query, 'datatype'),
              users: listFilterOf<string>(query, 'user'),
              date: dateFilterOf(query, 'date'),
              updatedAt: dateFilterOf(query, 'updatedAt'),
              order: orderOf(query, ctx.querystring, MEASURE_ORDERS),
            },
            query,
          ),
        );
        return { ...found, page: query.page, limit: query.limit };
      },
    })
    .create({
      summary: 'Store a measure',
      description:
        "`user` must be the caller's own IRI and `datatype` an active datatype (422 otherwise); `value` is in the datatype's unit, finite, within ±1e12, not negative for units that cannot be (g, kg, cm, bpm, %, s...), 0 or 1 for booleans; `date` has an offset.",
      body: createBody,
      handler: async ({ body, caller: user }) => {
        return createMeasure(db, user.id, {
          userId: body.user,
          datatypeId: body.datatype,
          value: body.value,
          date: body.date,
        });
      },
      location: (m) => iri('user_measures', m.id),
    })
    .get({
      summary: 'One measure of the caller',
      handler: async ({ params, caller }) => findMeasure(db, caller.id, params.id),
    })
    .update({
      summary: 'Change a measure of the caller',
      description: 'The fields sent replace their values; the others stay. Same rules as the creation.',
      body: updateBody,
      handler: async ({ params, body, caller: user }) => {
        return updateMeasure(db, user.id, params.id, {
          ...(body.user !== undefined ? { userId: body.user } : {}),
          ...(body.datatype !== undefined ? { datatypeId: body.datatype } : {}),
          ...(body.value !== undefined ? { value: body.value } : {}),
          ...(body.date !== undefined ? { date: body.date } : {}),
        });
      },
    })
    .remove({
      summary: 'Delete a measure of the caller',
      handler: async ({ params, caller }) => deleteMeasure(db, caller.id, params.id),
    });
}
