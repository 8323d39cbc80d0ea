import { z } from 'zod';
import { challengeFields } from '../../shared/tracking/challenges/fields.ts';
import type { ChallengeRow } from '../../shared/tracking/challenges/query.ts';
import {
  CHALLENGE_DATATYPES,
  CHALLENGE_ORDERS,
  createChallenge,
  deleteChallenge,
  findChallenge,
  listChallenges,
  MAX_CHALLENGE_TARGET,
  MAX_CHALLENGES_PER_USER,
  updateChallenge,
} from '../../shared/tracking/challenges/store.ts';
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
  orderOf,
  orderShape,
  pagingShape,
  writeBody,
} from './schemas.ts';
import { trackingResource } from './tracking-resource.ts';

/**
 * /v2/user_challenges (docs/tracking-gear-goals-challenges.md): the caller's challenges; their
 * `result` and `achievedAt` are kept by the records job. Rules and storage:
 * shared/tracking/challenges/, the figures shared/tracking/progress/.
 */

const PATH = '/user_challenges';
const iriString = (example: string) => z.string().meta({ format: 'iri-reference', example });
const DATATYPES = Object.entries(CHALLENGE_DATATYPES)
  .map(([id, what]) => `${id} (${what})`)
  .join(', ');

const challengeSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    user: iriString('/v2/users/a1b2c3'),
    targetDatatype: iriString('/v2/datatypes/5').meta({ description: `one of the datatypes ${DATATYPES}` }),
    startedAt: dateTimeOut,
    endedAt: dateTimeOut,
    achievedAt: z.string().nullable().meta({
      format: 'date-time',
      example: '2026-03-14T19:30:00+01:00',
      description:
        "when the activity that made the result reach the target ended, in the user's time zone; null until then",
    }),
    target: z.number().nullable().meta({ description: "in the datatype's unit (m, s, or a count)" }),
    result: z
      .number()
      .meta({ description: 'the sum so far, kept by the records job a moment after each activity change' }),
    sport: iriString('/v2/sports/121').nullable().meta({ description: 'null: every sport' }),
    createdAt: dateTimeOut,
    updatedAt: dateTimeOut,
    achievedBy: iriString('/v2/activities/ab12')
      .nullable()
      .meta({ description: 'extension: the activity that crossed the target' }),
  })
  .meta({ id: 'UserChallenge' });

const challengeView: HydraView<ChallengeRow, typeof challengeSchema> = {
  type: 'UserChallenge',
  path: `${TRACKING_PREFIX}${PATH}`,
  id: (c) => c.id,
  fields: challengeFields,
};

const target = z
  .number()
  .positive()
  .max(MAX_CHALLENGE_TARGET)
  .nullable()
  .meta({ description: "above 0, in the datatype's unit; null: no target (never achieved)" });
const writable = {
  name: z.string().min(1).max(255),
  user: iriOf('users').optional().meta({ description: "the caller's IRI (the default)" }),
  targetDatatype: integerIriOf('datatypes').meta({ description: `one of the datatypes ${DATATYPES}` }),
  startedAt: dateTime,
  endedAt: dateTime.meta({ description: 'after startedAt' }),
  target: target.optional(),
  sport: integerIriOf('sports').nullable().optional().meta({ description: 'only activities of this sport count' }),
};
const readOnly = ['id', 'achievedAt', 'result', 'createdAt', 'updatedAt', 'achievedBy'];
const createBody = writeBody('UserChallenge', writable, readOnly);
const updateFields = {
  name: writable.name.optional(),
  user: writable.user,
  endedAt: writable.endedAt.optional(),
  target: writable.target,
  sport: writable.sport,
};
// v2.26's PUT changes name, endedAt, target and sport: the others, sent back, are ignored.
const updateBody = writeBody('UserChallenge', updateFields, [...readOnly, 'targetDatatype', 'startedAt']);

const listQuery = z.object({
  ...listFilterShape('sport', integerRefOf('sports')),
  ...listFilterShape('targetDatatype', integerRefOf('datatypes')),
  ...orderShape(CHALLENGE_ORDERS),
  ...pagingShape,
});

/** /v2/user_challenges: the caller's challenges (create, list, read, update, delete). */
export function challengesResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  trackingResource(router, app, {
    path: PATH,
    item: challengeSchema,
    hydra: challengeView,
    notFound: 'No such challenge (or not yours)',
  })
    .list({
      summary: "The caller's challenges",
      description:
        "Only the caller's challenges. `sport` / `sport[]` and `targetDatatype` / `targetDatatype[]` take IRIs or bare ids; `order[id|targetDatatype.id|startedAt|endedAt|target]=asc|desc`, in the order given (default: startedAt ascending; ties by id). Paging: `page`, `limit` (default 30, at most 100).",
      query: listQuery,
      handler: async ({ query, ctx, caller, principal }) => {
        const found = await app.reads.read(principal.accountId, ({ db }) =>
          listChallenges(
            db,
            caller.id,
            {
              sports: listFilterOf<number>(query, 'sport'),
              targetDatatypes: listFilterOf<number>(query, 'targetDatatype'),
              order: orderOf(query, ctx.querystring, CHALLENGE_ORDERS),
            },
            query,
          ),
        );
        return { ...found, page: query.page, limit: query.limit };
      },
    })
    .create({
      summary: 'Take a challenge',
      description: `\`name\`, \`targetDatatype\` (${DATATYPES}), \`startedAt\` and \`endedAt\` (after it) are required; \`target\` above 0 (or null), \`sport\` an existing sport (or null: every sport); \`user\`, when sent, the caller's IRI. The activities that start within [startedAt, endedAt] (of \`sport\`, when set) count. \`result\` is 0 in this answer: the records job computes it from the activities already stored a moment later. At most ${MAX_CHALLENGES_PER_USER} challenges (409 beyond).`,
      body: createBody,
      errors: { 409: `The caller holds ${MAX_CHALLENGES_PER_USER} challenges already` },
      handler: async ({ body, caller }) =>
        createChallenge(db, caller.id, {
          userId: body.user,
          name: body.name,
          targetDatatypeId: body.targetDatatype,
          startedAt: body.startedAt,
          endedAt: body.endedAt,
          target: body.target,
          sportId: body.sport,
        }),
      location: (c) => iri('user_challenges', c.id),
    })
    .get({
      summary: 'One challenge of the caller',
      handler: async ({ params, caller }) => findChallenge(db, caller.id, params.id),
    })
    .update({
      summary: 'Change a challenge of the caller',
      description:
        "v2.26's PUT: `name`, `endedAt` (after startedAt), `target` and `sport`; the others are fixed at the creation (sent back, ignored). A change of the window, target or sport has the records job compute `result` and `achievedAt` again a moment later; `challenge_achieved` is never sent twice.",
      body: updateBody,
      handler: async ({ params, body, caller }) =>
        updateChallenge(db, caller.id, params.id, {
          userId: body.user,
          name: body.name,
          endedAt: body.endedAt,
          target: body.target,
          sportId: body.sport,
        }),
    })
    .remove({
      summary: 'Delete a challenge of the caller',
      handler: async ({ params, caller }) => deleteChallenge(db, caller.id, params.id),
    });
}
