import { z } from 'zod';
import { recordFields } from '../../shared/tracking/records/record-fields.ts';
import { findRecord, listRecords, RECORD_ORDERS, type UserRecord } from '../../shared/tracking/records/records-read.ts';
import type { AppContext } from '../context.ts';
import type { HydraView } from '../http/formats/format.ts';
import type { ApiRouter } from '../http/route.ts';
import {
  dateFilterOf,
  dateFilterShape,
  integerRefOf,
  listFilterOf,
  listFilterShape,
  orderOf,
  orderShape,
  pagingShape,
  refOf,
} from './schemas.ts';
import { trackingResource } from './tracking-resource.ts';

/** A UserRecord (docs/tracking-measures-records-upload.md). */
const recordSchema = z
  .object({
    id: z.string(),
    user: z.string().meta({ format: 'iri-reference' }),
    datatype: z.string().meta({ format: 'iri-reference' }),
    activity: z.string().meta({ format: 'iri-reference' }),
    sport: z.string().meta({ format: 'iri-reference' }),
    type: z.string().meta({
      description: '`all` (best summary value of the datatype) or `distance.<meters>m` (best time over that distance)',
      example: 'distance.5000m',
    }),
    value: z.number().meta({ description: "in the datatype's unit (seconds for distance records)" }),
    createdAt: z.string().meta({ format: 'date-time' }),
    updatedAt: z.string().meta({ format: 'date-time' }),
    date: z.string().meta({ format: 'date-time', description: 'when the record was achieved' }),
  })
  .meta({ id: 'UserRecord' });

const recordView: HydraView<UserRecord, typeof recordSchema> = {
  type: 'UserRecord',
  path: '/v2/user_records',
  id: (r) => r.id,
  fields: recordFields,
};

/** Record types are short words (`all`, `distance.5000m`; 64 characters at most in the reference). */
const recordType = z.string().min(1).max(64);

const listQuery = z.object({
  ...listFilterShape('activity', refOf('activities')),
  ...listFilterShape('sport', integerRefOf('sports')),
  ...listFilterShape('type', recordType),
  ...listFilterShape('datatype', integerRefOf('datatypes')),
  ...listFilterShape('user', refOf('users')),
  ...dateFilterShape('updatedAt'),
  ...orderShape(RECORD_ORDERS),
  ...pagingShape,
});

/** /v2/user_records: the caller's records, read only (the records job writes them). */
export function recordsResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  trackingResource(router, app, {
    path: '/user_records',
    item: recordSchema,
    hydra: recordView,
    notFound: 'No such user record (or not yours)',
  })
    .list({
      summary: "The caller's records",
      description:
        "Only the caller's records, computed after each activity import. Filters, each scalar (`sport=121`) or repeated / array form (`sport[]=121&sport[]=385`), values ORed within a filter and ANDed across filters: `activity`, `sport`, `datatype` (IRIs or bare ids), `type` (`all`, `distance.5000m`...); `updatedAt[after|before|strictly_after|strictly_before]` (syncing: docs/tracking-sync.md). `order[id|type|value|createdAt|updatedAt]=asc|desc` (default: id ascending; ties by id). Paging: `page`, `limit` (default 30, at most 100).",
      query: listQuery,
      handler: async ({ query, ctx, caller: user, principal }) => {
        const found = await app.reads.read(principal.accountId, ({ db }) =>
          listRecords(
            db,
            user.id,
            {
              activities: listFilterOf<string>(query, 'activity'),
              sports: listFilterOf<number>(query, 'sport'),
              types: listFilterOf<string>(query, 'type'),
              datatypes: listFilterOf<number>(query, 'datatype'),
              users: listFilterOf<string>(query, 'user'),
              updatedAt: dateFilterOf(query, 'updatedAt'),
              order: orderOf(query, ctx.querystring, RECORD_ORDERS),
            },
            query,
          ),
        );
        return { ...found, page: query.page, limit: query.limit };
      },
    })
    .get({
      summary: 'One record of the caller',
      handler: async ({ params, caller }) => findRecord(db, caller.id, params.id),
    });
}
