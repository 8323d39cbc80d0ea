import { z } from 'zod';
import { allowOnSport, disallowOnSport, placeSport, placeSports, type RuleKind } from '../../shared/places/sports.ts';
import type { AppContext } from '../context.ts';
import type { ApiRouter } from '../http/route.ts';
import { DELETED } from './common.ts';
import { messageSchema } from './schemas.ts';
import { placesServiceResource } from './service-resource.ts';

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
const slug = z.string().min(1).max(100);

/** Sports as the places service shows them (English name, allowed tags and filters); staff edit the rules. */
export function placeSportsResource(router: ApiRouter, app: AppContext) {
  const { db } = app;
  const sports = placesServiceResource(router, app, {
    path: '/sports',
    itemPath: '/:sport_id',
    itemParams: sportParams,
    item: sportSchema,
    access: { read: 'public', write: 'bearer' },
    notFound: 'Unknown sport',
  })
    .action({
      method: 'get',
      on: 'collection',
      path: '',
      summary: 'Every sport with its allowed place tags and filters, keyed by id',
      response: z.record(z.string(), sportSchema),
      handler: async () => Object.fromEntries((await placeSports(db)).map((s) => [String(s.id), s])),
    })
    .get({ summary: 'One sport', handler: ({ params }) => placeSport(db, params.sport_id) });
  for (const kind of ['filters', 'tags'] as const satisfies RuleKind[]) {
    const one = kind === 'tags' ? 'tag' : 'filter';
    sports
      .action({
        method: 'get',
        path: `/${kind}`,
        summary: `The ${kind} allowed on activities of a sport`,
        response: z.array(z.string()),
        handler: async ({ params }) => (await placeSport(db, params.sport_id))[kind],
      })
      .action({
        method: 'post',
        path: `/${kind}`,
        summary: `Allow a ${one} on activities of a sport (staff only)`,
        description: `Body \`{slug}\`: a ${one} of the ${one} list (422 otherwise). Non-staff tokens get 403.`,
        body: z.strictObject({ slug }),
        errors: { 403: 'Not a staff account' },
        response: z.array(z.string()),
        handler: ({ params, body, caller }) => allowOnSport(db, caller, kind, params.sport_id, body.slug),
      })
      .action({
        method: 'delete',
        path: `/${kind}/:slug`,
        params: sportParams.extend({ slug }),
        summary: `Disallow a ${one} on a sport (staff only)`,
        description: 'Activities keep the values they already have; new writes are checked against the new list.',
        errors: { 403: 'Not a staff account' },
        response: messageSchema,
        handler: async ({ params, caller }) => {
          await disallowOnSport(db, caller, kind, params.sport_id, params.slug);
          return DELETED;
        },
      });
  }
  return sports;
}
