import { z } from 'zod';
import { formatDateTime } from '../../shared/tracking/dates.ts';
import {
  AUTOCOMPLETE_PARAMETERS,
  type EquipmentSuggestion,
  OTHERS_MIN_USERS,
  suggestEquipment,
} from '../../shared/tracking/gear/autocomplete.ts';
import {
  type EquipmentSumup,
  equipmentFields,
  equipmentSumupIri,
  equipmentSumups,
} from '../../shared/tracking/gear/fields.ts';
import {
  createEquipment,
  deleteEquipment,
  EQUIPMENT_CATEGORIES,
  type EquipmentRow,
  findEquipment,
  listEquipments,
  MAX_ALERT_DISTANCE,
  MAX_EQUIPMENTS_PER_USER,
  updateEquipment,
} from '../../shared/tracking/gear/store.ts';
import { iri, TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import type { AppContext } from '../context.ts';
import type { HydraView } from '../http/formats/format.ts';
import type { ApiRouter } from '../http/route.ts';
import {
  dateTime,
  dateTimeOut,
  integerIriOf,
  integerRefOf,
  iriOf,
  listFilterOf,
  listFilterShape,
  pagingShape,
  refOf,
  writeBody,
} from './schemas.ts';
import { idParams, trackingResource } from './tracking-resource.ts';

/**
 * /v2/user_equipments (docs/tracking-gear-goals-challenges.md): the caller's gear, its totals as
 * v2.26's sum-ups (`/v2/user_equipments/{id}/sumups`) and the autocomplete of brands and names.
 * Rules and storage live in shared/tracking/gear/; the totals are the records job's.
 */

const PATH = '/user_equipments';
const iriString = (example: string) => z.string().meta({ format: 'iri-reference', example });

const equipmentSchema = z
  .object({
    id: z.string(),
    user: iriString('/v2/users/a1b2c3'),
    category: z.string().meta({ description: EQUIPMENT_CATEGORIES.join(', '), example: 'shoes' }),
    brand: z.string().meta({ example: 'Kalenji' }),
    name: z.string().meta({ example: 'Kiprun KS900' }),
    sumups: z.array(iriString('/v2/user_equipments/ab12/sumups#5')).meta({
      description:
        "the gear's totals (distance 5, duration 24, moving time 30, ascent 18, activity count 98), each a member of GET /v2/user_equipments/{id}/sumups",
    }),
    sportsAutoAssigned: z.array(iriString('/v2/sports/121')).meta({
      description: 'a new activity of one of these sports gets this gear when it names none',
    }),
    startDate: dateTimeOut
      .nullable()
      .meta({ description: 'since when the gear is used (auto-assignment skips earlier activities)' }),
    createdAt: dateTimeOut,
    updatedAt: dateTimeOut,
    retired: z.boolean().meta({ description: 'extension: retired gear is never auto-assigned' }),
    alertDistance: z.number().nullable().meta({
      description: 'extension: metres; the `equipment_alert` web hook event is sent when the distance reaches it',
      example: 700000,
    }),
    alertedAt: dateTimeOut
      .nullable()
      .meta({ description: 'extension: when that event was sent (cleared by a new alertDistance)' }),
    totals: z
      .object({
        distance: z.number().meta({ description: 'metres' }),
        duration: z.number().meta({ description: 'seconds' }),
        movingTime: z.number().meta({ description: 'seconds' }),
        elevationGain: z.number().meta({ description: 'metres (ascent)' }),
        activities: z.number().int(),
      })
      .meta({
        description:
          'extension: the totals of the sum-ups, kept by the records job a moment after each activity change',
      }),
  })
  .meta({ id: 'UserEquipment' });

const equipmentView: HydraView<EquipmentRow, typeof equipmentSchema> = {
  type: 'UserEquipment',
  path: `${TRACKING_PREFIX}${PATH}`,
  id: (e) => e.id,
  fields: equipmentFields,
};

const sumupSchema = z
  .object({
    equipment: iriString('/v2/user_equipments/ab12'),
    datatype: iriString('/v2/datatypes/5'),
    value: z.number().meta({ description: "the total, in the datatype's unit (98: the activity count)" }),
    updatedAt: dateTimeOut,
  })
  .meta({ id: 'UserEquipmentSumup' });

const sumupView: HydraView<EquipmentSumup, typeof sumupSchema> = {
  type: 'UserEquipmentSumup',
  path: `${TRACKING_PREFIX}${PATH}`,
  id: (s) => `${s.equipmentId}/sumups#${s.datatypeId}`,
  // A fragment of the gear's sum-ups document: a total has no address of its own.
  iri: (s) => equipmentSumupIri(s.equipmentId, s.datatypeId),
  fields: (s) => ({
    equipment: iri('user_equipments', s.equipmentId),
    datatype: iri('datatypes', s.datatypeId),
    value: s.value,
    updatedAt: formatDateTime(s.updatedAt),
  }),
};

type Suggestion = EquipmentSuggestion & { query: string };

const suggestionSchema = z
  .object({
    brand: z.string().optional().meta({ description: 'with `parameter` brand' }),
    name: z.string().optional().meta({ description: 'with `parameter` name' }),
    mine: z.boolean().meta({ description: "whether the caller's own gear has it" }),
  })
  .meta({ id: 'UserEquipmentSuggestion' });

const suggestionView: HydraView<Suggestion, typeof suggestionSchema> = {
  type: 'UserEquipmentSuggestion',
  path: `${TRACKING_PREFIX}${PATH}/autocomplete`,
  id: (s) => s.value,
  iri: (s) =>
    `${TRACKING_PREFIX}${PATH}/autocomplete/${s.parameter}/${encodeURIComponent(s.query)}#${encodeURIComponent(s.value)}`,
  fields: (s) => (s.parameter === 'brand' ? { brand: s.value, mine: s.mine } : { name: s.value, mine: s.mine }),
};

const text = (what: string) =>
  z
    .string()
    .min(2, `must be 2 to 128 characters`)
    .max(128, 'must be 2 to 128 characters')
    .meta({ description: `${what}, 2 to 128 characters` });
const category = z
  .enum(EQUIPMENT_CATEGORIES, { error: `must be one of ${EQUIPMENT_CATEGORIES.join(', ')}` })
  .meta({ description: EQUIPMENT_CATEGORIES.join(', ') });
const writable = {
  user: iriOf('users').optional().meta({ description: "the caller's IRI (the default)" }),
  category,
  brand: text('the brand'),
  name: text("the gear's name"),
  startDate: dateTime.nullable().optional(),
  sportsAutoAssigned: z.array(integerIriOf('sports')).max(100).optional(),
  retired: z.boolean().optional().meta({ description: 'extension (default false)' }),
  alertDistance: z
    .number()
    .positive()
    .max(MAX_ALERT_DISTANCE)
    .nullable()
    .optional()
    .meta({ description: 'extension: metres, above 0; null for none' }),
};
const readOnly = ['id', 'sumups', 'createdAt', 'updatedAt', 'alertedAt', 'totals'];
const createBody = writeBody('UserEquipment', writable, readOnly);
const updateBody = writeBody(
  'UserEquipment',
  { ...writable, category: category.optional(), brand: writable.brand.optional(), name: writable.name.optional() },
  readOnly,
);

const trueFalse = z
  .enum(['true', 'false', '1', '0'], { error: 'must be true or false (1 or 0)' })
  .transform((v) => v === 'true' || v === '1');

const listQuery = z.object({
  ...listFilterShape('user', refOf('users')),
  ...listFilterShape('sportsAutoAssigned', integerRefOf('sports')),
  retired: trueFalse.optional(),
  ...pagingShape,
});

const autocompleteParams = z.object({
  parameter: z.enum(AUTOCOMPLETE_PARAMETERS, { error: 'must be brand or name' }),
  query: z.string().min(1).max(128),
});

/** The members a write sent, as the store takes them. */
const inputOf = (body: Partial<z.output<typeof createBody>>) => ({
  userId: body.user,
  category: body.category,
  brand: body.brand,
  name: body.name,
  startDate: body.startDate,
  sportsAutoAssigned: body.sportsAutoAssigned,
  retired: body.retired,
  alertDistance: body.alertDistance,
});

/** /v2/user_equipments, its sum-ups and its autocomplete. */
export function equipmentsResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  // Declared before the item routes: its path has no id.
  trackingResource(router, app, {
    path: `${PATH}/autocomplete/:parameter/:query`,
    params: autocompleteParams,
    itemPath: '',
    itemParams: autocompleteParams,
    item: suggestionSchema,
    hydra: suggestionView,
  }).list({
    summary: 'Gear brands or names starting with the query, without whose they are',
    description: `\`parameter\` is \`brand\` or \`name\`; \`query\` the start typed (case-insensitive, 1 to 128 characters). The caller's own values first, then the most used, then alphabetical; a value only other users wrote is offered once ${OTHERS_MIN_USERS} of them wrote it. Members carry the value (\`brand\` or \`name\`) and \`mine\`, never an owner or a gear IRI. Paging: \`page\`, \`limit\`.`,
    query: z.object(pagingShape),
    handler: async ({ params, query, caller }) => {
      const found = await suggestEquipment(db, caller.id, params.parameter, params.query, query);
      return {
        items: found.items.map((s) => ({ ...s, query: params.query })),
        total: found.total,
        page: query.page,
        limit: query.limit,
      };
    },
  });
  trackingResource(router, app, {
    path: PATH,
    item: equipmentSchema,
    hydra: equipmentView,
    notFound: 'No such gear (or not yours)',
  })
    .list({
      summary: "The caller's gear, with its totals",
      description:
        "Only the caller's gear, oldest first, each with its totals (one indexed read). Filters (scalar or `name[]`, several values match any): `user` (only the caller has gear here), `sportsAutoAssigned` (sport IRIs or ids); `retired=true|false`. Paging: `page`, `limit` (default 30, at most 100).",
      query: listQuery,
      handler: async ({ query, caller, principal }) => {
        const found = await app.reads.read(principal.accountId, ({ db }) =>
          listEquipments(
            db,
            caller.id,
            {
              users: listFilterOf<string>(query, 'user'),
              sports: listFilterOf<number>(query, 'sportsAutoAssigned'),
              retired: query.retired,
            },
            query,
          ),
        );
        return { ...found, page: query.page, limit: query.limit };
      },
    })
    .create({
      summary: 'Register gear',
      description: `\`category\` (${EQUIPMENT_CATEGORIES.join(', ')}), \`brand\` and \`name\` (2 to 128 characters) are required; \`user\`, when sent, must be the caller's IRI; \`sportsAutoAssigned\` existing sports. A user holds at most ${MAX_EQUIPMENTS_PER_USER} gear items, retired ones included (409 beyond). Totals start at 0: the activities named with it afterwards (or auto-assigned to it) add to them.`,
      body: createBody,
      errors: { 409: `The caller holds ${MAX_EQUIPMENTS_PER_USER} gear items already` },
      handler: async ({ body, caller }) =>
        createEquipment(db, caller.id, {
          ...inputOf(body),
          category: body.category,
          brand: body.brand,
          name: body.name,
        }),
      location: (e) => iri('user_equipments', e.id),
    })
    .get({
      summary: 'One gear item of the caller, with its totals',
      handler: async ({ params, caller }) => findEquipment(db, caller.id, params.id),
    })
    .update({
      summary: 'Change gear of the caller',
      description:
        'The fields sent replace their values; the others stay. A new `alertDistance` clears `alertedAt` (the alert may come again). Read-only fields sent back are ignored, unknown ones are a 422.',
      body: updateBody,
      handler: async ({ params, body, caller }) => updateEquipment(db, caller.id, params.id, inputOf(body)),
    })
    .remove({
      summary: 'Delete gear of the caller',
      description: 'Its activities stay, without it in `equipments`. Answers 204.',
      handler: async ({ params, caller }) => deleteEquipment(db, caller.id, params.id),
    });
  trackingResource(router, app, {
    path: `${PATH}/:id/sumups`,
    params: idParams,
    itemPath: '',
    item: sumupSchema,
    hydra: sumupView,
    notFound: 'No such gear (or not yours)',
  }).list({
    summary: "The gear's totals as sum-ups",
    description:
      "Its distance (5), duration (24), moving time (30), ascent (18) and activity count (98), each a node whose `@id` is one of the gear's `sumups`. Kept by the records job a moment after each activity change. Every total on one page.",
    handler: async ({ params, caller }) => equipmentSumups(await findEquipment(db, caller.id, params.id)),
  });
}
