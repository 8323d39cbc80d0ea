import { z } from 'zod';
import { goalFields } from '../../shared/tracking/goals/fields.ts';
import {
  createGoal,
  deleteGoal,
  findGoal,
  GOAL_ORDERS,
  type GoalRow,
  listGoals,
  MAX_GOALS_PER_USER,
  updateGoal,
} from '../../shared/tracking/goals/store.ts';
import { iri, TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import { MAX_MEASURE_MAGNITUDE } from '../../shared/tracking/measures/store.ts';
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
  orderOf,
  orderShape,
  pagingShape,
  refOf,
  writeBody,
} from './schemas.ts';
import { trackingResource } from './tracking-resource.ts';

/**
 * /v2/user_measure_goals (docs/tracking-gear-goals-challenges.md): the caller's goals on a
 * measure, each read with its progress. Rules and storage: shared/tracking/goals/.
 */

const PATH = '/user_measure_goals';
const iriString = (example: string) => z.string().meta({ format: 'iri-reference', example });

const goalSchema = z
  .object({
    id: z.number().int().meta({ description: 'an integer, as v2.26 has it' }),
    user: iriString('/v2/users/a1b2c3'),
    datatype: iriString('/v2/datatypes/181'),
    initial: z.number().nullable().meta({ description: "in the datatype's unit; null: taken from the measures" }),
    goal: z.number().meta({ description: "in the datatype's unit (181, body weight: grams)", example: 75000 }),
    startdate: dateTimeOut,
    createdAt: dateTimeOut,
    updatedAt: dateTimeOut,
    progress: z
      .object({
        start: z.number().nullable().meta({
          description: '`initial`, else the latest measure at or before `startdate`, else the first after it',
        }),
        latest: z
          .object({ measure: iriString('/v2/user_measures/ab12'), value: z.number(), date: dateTimeOut })
          .nullable()
          .meta({ description: 'the latest measure of the datatype at or after `startdate`' }),
        share: z.number().nullable().meta({
          description:
            '(latest − start) / (goal − start), from 0 to 1; null without start or latest, or when goal = start',
          example: 0.6,
        }),
        reached: z.boolean().meta({ description: 'the latest measure is at the goal or beyond it' }),
      })
      .meta({ description: 'extension: computed on every read from the measures' }),
  })
  .meta({ id: 'UserMeasureGoal' });

const goalView: HydraView<GoalRow, typeof goalSchema> = {
  type: 'UserMeasureGoal',
  path: `${TRACKING_PREFIX}${PATH}`,
  id: (g) => String(g.id),
  fields: goalFields,
};

const value = (what: string) =>
  z
    .number()
    .min(-MAX_MEASURE_MAGNITUDE)
    .max(MAX_MEASURE_MAGNITUDE)
    .meta({ description: `${what}, in the datatype's unit` });
const writable = {
  user: iriOf('users').meta({ description: "the caller's own user IRI" }),
  datatype: integerIriOf('datatypes'),
  initial: value('where the goal starts from').nullable().optional(),
  goal: value('the value to reach'),
  startdate: dateTime,
};
const readOnly = ['id', 'createdAt', 'updatedAt', 'progress'];
const createBody = writeBody('UserMeasureGoal', writable, readOnly);
const updateBody = writeBody('UserMeasureGoal', z.object(writable).partial().shape, readOnly);

const listQuery = z.object({
  ...listFilterShape('user', refOf('users')),
  ...listFilterShape('datatype', integerRefOf('datatypes')),
  ...orderShape(GOAL_ORDERS),
  ...pagingShape,
});

// As every tracking item path: an id that is not a goal's (an integer) is a 404 of the store.
/** /v2/user_measure_goals: the caller's goals (create, list, read, update, delete). */
export function measureGoalsResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  trackingResource(router, app, {
    path: PATH,
    item: goalSchema,
    hydra: goalView,
    notFound: 'No such measure goal (or not yours)',
  })
    .list({
      summary: "The caller's measure goals, with their progress",
      description:
        "Only the caller's goals. `user` / `user[]` and `datatype` / `datatype[]` take IRIs or bare ids; `order[id|startdate]=asc|desc` (default: startdate ascending; ties by id). Each goal carries its `progress`, read from the measures in the same statement. Paging: `page`, `limit` (default 30, at most 100).",
      query: listQuery,
      handler: async ({ query, ctx, caller, principal }) => {
        const found = await app.reads.read(principal.accountId, ({ db }) =>
          listGoals(
            db,
            caller.id,
            {
              users: listFilterOf<string>(query, 'user'),
              datatypes: listFilterOf<number>(query, 'datatype'),
              order: orderOf(query, ctx.querystring, GOAL_ORDERS),
            },
            query,
          ),
        );
        return { ...found, page: query.page, limit: query.limit };
      },
    })
    .create({
      summary: 'Set a measure goal',
      description: `\`user\` must be the caller's IRI, \`datatype\` an active datatype (181, body weight in grams, or any other measure datatype); \`goal\` and \`initial\` (optional) follow the datatype's unit as a measure's value does (finite, within ±1e12, not negative for units that cannot be). At most ${MAX_GOALS_PER_USER} goals (409 beyond).`,
      body: createBody,
      errors: { 409: `The caller holds ${MAX_GOALS_PER_USER} goals already` },
      handler: async ({ body, caller }) =>
        createGoal(db, caller.id, {
          userId: body.user,
          datatypeId: body.datatype,
          initial: body.initial,
          goal: body.goal,
          startdate: body.startdate,
        }),
      location: (g) => iri('user_measure_goals', g.id),
    })
    .get({
      summary: 'One measure goal of the caller, with its progress',
      handler: async ({ params, caller }) => findGoal(db, caller.id, params.id),
    })
    .update({
      summary: 'Change a measure goal of the caller',
      description: 'The fields sent replace their values; the others stay. Same rules as the creation.',
      body: updateBody,
      handler: async ({ params, body, caller }) =>
        updateGoal(db, caller.id, params.id, {
          userId: body.user,
          datatypeId: body.datatype,
          initial: body.initial,
          goal: body.goal,
          startdate: body.startdate,
        }),
    })
    .remove({
      summary: 'Delete a measure goal of the caller',
      handler: async ({ params, caller }) => deleteGoal(db, caller.id, params.id),
    });
}
