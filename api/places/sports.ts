import { sql } from 'kysely';
import { z } from 'zod';
import type { Db } from '../../shared/db/database.ts';
import type { AppContext } from '../context.ts';
import { requireBearer } from '../http/auth.ts';
import { notFound, unprocessable } from '../http/errors.ts';
import type { ApiRouter } from '../http/route.ts';
import { DELETED, requireStaff } from './common.ts';
import { messageSchema, problem } from './schemas.ts';

const sportSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  tags: z.array(z.string()),
  filters: z.array(z.string()),
});
const sportParams = z.object({
  sport_id: z.coerce
    .number()
    .int()
    .positive()
    .max(2 ** 31 - 1),
});

/** Sports as the places service shows them: English name, allowed tags and filters. One query. */
async function sports(db: Db, id?: number) {
  let q = db
    .selectFrom('sports as s')
    .select([
      's.id',
      sql<string>`coalesce(s.names->>'en', s.slug)`.as('name'),
      sql<string[]>`array(select tag_slug from sport_place_tags t where t.sport_id = s.id order by tag_slug)`.as(
        'tags',
      ),
      sql<
        string[]
      >`array(select filter_slug from sport_place_filters f where f.sport_id = s.id order by filter_slug)`.as(
        'filters',
      ),
    ])
    .orderBy('s.id');
  if (id !== undefined) q = q.where('s.id', '=', id);
  return q.execute();
}

async function sportOr404(db: Db, id: number) {
  const [sport] = await sports(db, id);
  if (!sport) throw notFound(`Unknown sport ${id}`);
  return sport;
}

export function addSportRoutes(router: ApiRouter, app: AppContext): void {
  const auth = requireBearer(app.verifier);

  router.add({
    method: 'get',
    path: '/sports',
    summary: 'Every sport with its allowed place tags and filters, keyed by id',
    responses: { 200: { description: 'Object keyed by sport id (string)', schema: z.record(z.string(), sportSchema) } },
    handler: async () => Object.fromEntries((await sports(app.db)).map((s) => [String(s.id), s])),
  });
  router.add({
    method: 'get',
    path: '/sports/:sport_id',
    summary: 'One sport',
    params: sportParams,
    responses: { 200: { description: 'The sport', schema: sportSchema }, 404: problem('Unknown sport') },
    handler: async (_ctx, { params }) => sportOr404(app.db, params.sport_id),
  });

  for (const kind of ['filters', 'tags'] as const) {
    const table = kind === 'tags' ? 'sport_place_tags' : 'sport_place_filters';
    const column = kind === 'tags' ? 'tag_slug' : 'filter_slug';
    const known = kind === 'tags' ? 'place_tags' : 'place_filters';
    const one = kind === 'tags' ? 'tag' : 'filter';
    router.add({
      method: 'get',
      path: `/sports/:sport_id/${kind}`,
      summary: `The ${kind} allowed on activities of a sport`,
      params: sportParams,
      responses: {
        200: { description: `Allowed ${kind}`, schema: z.array(z.string()) },
        404: problem('Unknown sport'),
      },
      handler: async (_ctx, { params }) => (await sportOr404(app.db, params.sport_id))[kind],
    });
    router.add({
      method: 'post',
      path: `/sports/:sport_id/${kind}`,
      summary: `Allow a ${one} on activities of a sport (staff only)`,
      description: `Body \`{slug}\`: a ${one} of the ${one} list (422 otherwise). Non-staff tokens get 403.`,
      security: ['bearer'],
      middleware: [auth],
      params: sportParams,
      body: z.strictObject({ slug: z.string().min(1).max(100) }),
      responses: {
        200: { description: `Every allowed ${one}`, schema: z.array(z.string()) },
        401: problem('Missing or invalid token'),
        403: problem('Not a staff account'),
        404: problem('Unknown sport'),
        422: problem(`Unknown ${one}`),
      },
      handler: async (ctx, { params, body }) => {
        requireStaff(ctx);
        await sportOr404(app.db, params.sport_id);
        const exists = await app.db.selectFrom(known).select('slug').where('slug', '=', body.slug).executeTakeFirst();
        if (!exists) {
          const all = (await app.db.selectFrom(known).select('slug').orderBy('slug').execute()).map((r) => r.slug);
          throw unprocessable([
            { path: 'body.slug', message: `unknown ${one} "${body.slug}"; known: ${all.join(', ')}` },
          ]);
        }
        await app.db
          .insertInto(table)
          .values({ sport_id: params.sport_id, [column]: body.slug } as never)
          .onConflict((oc) => oc.doNothing())
          .execute();
        return (await sportOr404(app.db, params.sport_id))[kind];
      },
    });
    router.add({
      method: 'delete',
      path: `/sports/:sport_id/${kind}/:slug`,
      summary: `Disallow a ${one} on a sport (staff only)`,
      description: `Activities keep the values they already have; new writes are checked against the new list.`,
      security: ['bearer'],
      middleware: [auth],
      params: sportParams.extend({ slug: z.string().min(1).max(100) }),
      responses: {
        200: { description: 'Deleted', schema: messageSchema },
        401: problem('Missing or invalid token'),
        403: problem('Not a staff account'),
        404: problem(`Unknown sport, or ${one} not allowed on it`),
      },
      handler: async (ctx, { params }) => {
        requireStaff(ctx);
        const r = await app.db
          .deleteFrom(table)
          .where('sport_id', '=', params.sport_id)
          .where(column, '=', params.slug)
          .executeTakeFirst();
        if (!r.numDeletedRows) throw notFound(`Sport ${params.sport_id} does not allow ${one} "${params.slug}"`);
        return DELETED;
      },
    });
  }
}
