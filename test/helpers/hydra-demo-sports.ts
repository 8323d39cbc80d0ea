import { z } from 'zod';
import type { AppContext } from '../../api/context.ts';
import type { HydraView } from '../../api/http/formats/format.ts';
import { Resource } from '../../api/http/resource.ts';
import { ApiRouter } from '../../api/http/route.ts';
import type { ServiceModule } from '../../api/service-module.ts';
import { trackingService } from '../../api/tracking/index.ts';
import { listFilterOf, listFilterShape, orderOf, orderShape, pagingShape } from '../../api/tracking/schemas.ts';
import type { Db } from '../../shared/db/database.ts';
import { notFoundError } from '../../shared/errors.ts';

/**
 * Shared by the test/tracking-hydra-*.test.ts files (not a test file itself): one throwaway Hydra
 * resource over the seeded sports, for paging and filters, added to the real /v2 service.
 */

interface DemoSport {
  id: number;
  slug: string;
  active: boolean;
  parent_id: number | null;
}

const demoView: HydraView<DemoSport, typeof demoItem> = {
  type: 'DemoSport',
  path: '/v2/demo_sports',
  id: (s) => String(s.id),
  fields: (s) => ({
    id: s.id,
    slug: s.slug,
    active: s.active,
    parent: s.parent_id === null ? null : `/v2/demo_sports/${s.parent_id}`,
  }),
};

const demoItem = z.object({
  id: z.number().int(),
  slug: z.string().meta({ description: 'the English name, slugified' }),
  active: z.boolean(),
  parent: z.string().nullable().meta({ format: 'iri-reference', example: '/v2/demo_sports/121' }),
});

const demoQuery = z.object({
  ...pagingShape,
  ...listFilterShape('id', z.coerce.number().int()),
  active: z.enum(['0', '1']).optional(),
  ...orderShape(['id', 'slug']),
});

async function demoPage(db: Db, query: z.output<typeof demoQuery>, querystring: string) {
  let q = db.selectFrom('sports').select(['id', 'slug', 'active', 'parent_id']);
  const ids = listFilterOf<number>(query, 'id');
  if (ids) q = q.where('id', 'in', ids.length ? ids : [-1]);
  if (query.active) q = q.where('active', '=', query.active === '1');
  const [items, total] = await Promise.all([
    orderOf(query, querystring, ['id', 'slug'])
      .reduce((acc, o) => acc.orderBy(o.prop, o.direction), q)
      .orderBy('id')
      .limit(query.limit)
      .offset((query.page - 1) * query.limit)
      .execute(),
    q
      .clearSelect()
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow(),
  ]);
  return { items, page: query.page, limit: query.limit, total: Number(total.n) };
}

function demoRouter(app: AppContext) {
  const router = new ApiRouter({
    prefix: '/v2',
    errorFormat: 'hydra',
    registry: app.registry,
    bodyLimitBytes: app.config.bodyLimitBytes,
    tag: 'demo',
  });
  new Resource(router, app, {
    path: '/demo_sports',
    itemPath: '/:id',
    itemParams: z.object({ id: z.coerce.number().int().positive() }),
    format: 'hydra',
    item: demoItem,
    hydra: demoView,
    access: { read: 'bearer+key', write: 'bearer+key' },
  })
    .list({
      summary: 'Demo sports',
      query: demoQuery,
      handler: ({ query, ctx }) => demoPage(app.db, query, ctx.querystring),
    })
    .get({
      summary: 'One demo sport',
      handler: async ({ params }) => {
        const sport = await app.db
          .selectFrom('sports')
          .select(['id', 'slug', 'active', 'parent_id'])
          .where('id', '=', params.id)
          .executeTakeFirst();
        if (!sport) throw notFoundError(`No demo sport ${params.id}`);
        return sport;
      },
    });
  return router.router;
}

/** The real tracking service (whatever resources it has when the test runs) plus /v2/demo_sports. */
export const trackingWithDemoSports: ServiceModule = {
  ...trackingService,
  routers: async (app) => [...(await trackingService.routers(app)), demoRouter(app)],
};
