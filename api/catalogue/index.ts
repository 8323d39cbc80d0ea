import { z } from 'zod';
import { type CatalogueGroup, groupBySlugOrId, listGroups } from '../../shared/catalogue/groups.ts';
import { type CatalogueLanguage, preferredLanguages } from '../../shared/catalogue/locale.ts';
import {
  type CatalogueSport,
  MAX_QUERY_LENGTH,
  relatedSports,
  searchSports,
  sportByIdOrSlug,
  sportsByIds,
} from '../../shared/catalogue/sports.ts';
import type { JsonApiView } from '../http/formats/format.ts';
import { Compound, related } from '../http/formats/jsonapi.ts';
import { acceptLanguageHeader } from '../http/locale-header.ts';
import { Resource } from '../http/resource.ts';
import { ApiRouter } from '../http/route.ts';
import type { ServiceModule } from '../service-module.ts';
import { catalogueCaching } from './caching.ts';
import { addRecommendationRoutes } from './recommendations.ts';

const id = (type: string, n: number) => ({ type, id: String(n) });

/** Spec: `children` is null for a sport without children (or a child), `parent` null for a top-level sport. */
export const sportView: JsonApiView<CatalogueSport> = {
  type: 'sport',
  path: '/sports',
  id: (s) => String(s.id),
  attributes: (s) => ({
    name: s.name,
    description: s.description,
    parent_id: s.parent_id,
    slug: s.slug,
    locale: s.locale,
    vendor_id: s.vendor_id,
    tags: s.tags,
  }),
  relationships: (s) => ({
    children: s.children.length ? s.children.map((c) => id('sport', c)) : null,
    parent: s.parent_id === null ? null : id('sport', s.parent_id),
  }),
};

/** Spec: `sports` is null for a group without sports. */
export const groupView: JsonApiView<CatalogueGroup> = {
  type: 'group',
  path: '/groups',
  id: (g) => String(g.id),
  attributes: (g) => ({ name: g.name, slug: g.slug, locale: g.locale }),
  relationships: (g) => ({ sports: g.sports.length ? g.sports.map((s) => id('sport', s)) : null }),
};

const sportItem = z.object({
  name: z.string(),
  description: z.string().nullable(),
  parent_id: z.number().int().nullable(),
  slug: z.string(),
  locale: z.string().meta({ description: 'the language served (Accept-Language, English fallback)' }),
  vendor_id: z.number().int().nullable().meta({ description: 'legacy catalogue id, when known' }),
  tags: z.array(z.string()),
});
const groupItem = z.object({ name: z.string(), slug: z.string(), locale: z.string() });

/** `include=a,b` restricted to the relationships a resource offers (JSON:API: others are errors). */
const include = (...names: string[]) =>
  z
    .string()
    .regex(new RegExp(`^(${names.join('|')})(,(${names.join('|')}))*$`), `Comma-separated, among: ${names.join(', ')}`)
    .optional()
    .transform((v) => new Set(v?.split(',') ?? []))
    .meta({ description: `related resources to include: ${names.join(', ')}` });

export const CATALOGUE_PAGE = { default: 100, max: 200 } as const;
const paging = {
  'page[number]': z.coerce.number().int().min(1).max(100_000).default(1),
  'page[size]': z.coerce.number().int().min(1).max(CATALOGUE_PAGE.max).default(CATALOGUE_PAGE.default),
};
const sportKey = z.object({ id_or_slug: z.string().min(1).max(100) });
const groupKey = z.object({ slug_or_id: z.string().min(1).max(100) });

const sportSearch = z.object({
  q: z
    .string()
    .trim()
    .min(1)
    .max(MAX_QUERY_LENGTH)
    .optional()
    .meta({ description: 'name search in the served language (case and accents ignored)' }),
  tag: z
    .string()
    .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'A tag slug (lower-case letters, digits and dashes)')
    .max(100)
    .optional(),
  vendor_id: z.coerce
    .number()
    .int()
    .positive()
    .max(2 ** 31 - 1)
    .optional()
    .meta({ description: 'legacy catalogue id of the sport' }),
  parents_only: z
    .enum(['true', 'false'])
    .optional()
    .transform((v) => v === 'true'),
  include: include('children', 'parent'),
  ...paging,
});

/**
 * `preferredLanguages` of an Accept-Language header, remembered: clients send a handful of
 * distinct headers, and parsing one (split, regular expressions, sort) costs more than a lookup.
 * Bounded: at most 500 headers of at most 200 characters; past that the memory starts afresh.
 */
const LANGUAGES = new Map<string, readonly CatalogueLanguage[]>();
function servedLanguages(acceptLanguage: string): readonly CatalogueLanguage[] {
  let languages = LANGUAGES.get(acceptLanguage);
  if (languages === undefined) {
    languages = Object.freeze(preferredLanguages(acceptLanguage));
    if (acceptLanguage.length <= 200) {
      if (LANGUAGES.size >= 500) LANGUAGES.clear();
      LANGUAGES.set(acceptLanguage, languages);
    }
  }
  return languages;
}

const LOCALE_NOTE =
  'Names and descriptions follow `Accept-Language`: the first listed (by q) catalogue language the item has a name in (a region is ignored: `fr-CA` is served as `fr`), else English; `locale` says which was served. Answers carry an ETag and `Cache-Control: public, max-age=300`; `If-None-Match` gives 304.';

/** The sports catalogue (JSON:API 1.1), mounted at `/sports` and `/groups` (see docs/catalogue.md). */
/** The catalogue's resources: JSON:API, public reads, writes with a token (the router tags them `catalogue`). */
const CATALOGUE_DEFAULTS = { format: 'jsonapi', access: { read: 'public', write: 'bearer' } } as const;

export const catalogueService: ServiceModule = {
  name: 'catalogue',
  errorFormat: 'jsonapi',
  prefixes: ['/sports', '/groups'],
  routers: (app) => {
    const { db } = app;
    const router = new ApiRouter({
      prefix: '',
      errorFormat: 'jsonapi',
      registry: app.registry,
      bodyLimitBytes: app.config.bodyLimitBytes,
      tag: 'catalogue',
      middleware: [catalogueCaching()],
    });
    const languagesOf = (ctx: { get: (h: string) => string }) => servedLanguages(ctx.get('accept-language'));

    new Resource(router, app, {
      path: '/sports',
      itemPath: '/:id_or_slug',
      itemParams: sportKey,
      ...CATALOGUE_DEFAULTS,
      jsonapi: sportView,
      item: sportItem,
      notFound: 'Unknown sport',
    })
      .list({
        summary: 'Search the sports catalogue',
        headers: acceptLanguageHeader,
        description: `Filters combine (AND). Every parameter error is a 404 naming the parameter (the spec's rule for search errors). Pages: \`page[number]\`, \`page[size]\` (default ${CATALOGUE_PAGE.default}, max ${CATALOGUE_PAGE.max}). ${LOCALE_NOTE}`,
        query: sportSearch,
        queryErrorStatus: 404,
        handler: async ({ query, ctx }) => {
          const languages = languagesOf(ctx);
          const search = {
            q: query.q,
            tag: query.tag,
            vendorId: query.vendor_id,
            parentsOnly: query.parents_only,
            languages,
            page: query['page[number]'],
            size: query['page[size]'],
          };
          const { page, included } = await app.reads.read(undefined, async (read) => {
            const page = await searchSports(read.pool, search);
            const included = query.include.size
              ? await relatedSports(read.db, page.items, query.include, languages)
              : [];
            return { page, included };
          });
          return { ...page, pageParam: 'page[number]', included: [related(sportView, included)] };
        },
      })
      .get({
        summary: 'One sport, by id or slug, with its children',
        headers: acceptLanguageHeader,
        description: `\`include=children,parent\` adds them to \`included\`; a bad parameter is a 400. ${LOCALE_NOTE}`,
        query: z.object({ include: include('children', 'parent') }),
        queryErrorStatus: 400,
        handler: async ({ params, query, ctx }) => {
          const languages = languagesOf(ctx);
          const sport = await sportByIdOrSlug(db, params.id_or_slug, languages);
          if (!query.include.size) return sport;
          return new Compound(sport, [related(sportView, await relatedSports(db, [sport], query.include, languages))]);
        },
      });

    new Resource(router, app, {
      path: '/groups',
      itemPath: '/:slug_or_id',
      itemParams: groupKey,
      ...CATALOGUE_DEFAULTS,
      jsonapi: groupView,
      item: groupItem,
      notFound: 'Unknown group',
    })
      .list({
        summary: 'Sport groups',
        headers: acceptLanguageHeader,
        description: `\`include=sports\` adds their sports. Pages: \`page[number]\`, \`page[size]\` (default ${CATALOGUE_PAGE.default}); a bad parameter is a 400. ${LOCALE_NOTE}`,
        query: z.object({ include: include('sports'), ...paging }),
        queryErrorStatus: 400,
        handler: async ({ query, ctx }) => {
          const languages = languagesOf(ctx);
          const { page, sports } = await app.reads.read(undefined, async (read) => {
            const page = await listGroups(read.db, languages, query['page[number]'], query['page[size]']);
            const ids = query.include.size ? [...new Set(page.items.flatMap((g) => g.sports))] : [];
            return { page, sports: await sportsByIds(read.db, ids, languages) };
          });
          return { ...page, pageParam: 'page[number]', included: [related(sportView, sports)] };
        },
      })
      .get({
        summary: 'One sport group, by slug or id',
        headers: acceptLanguageHeader,
        description: `\`include=sports\` adds its sports; a bad parameter is a 400. ${LOCALE_NOTE}`,
        query: z.object({ include: include('sports') }),
        queryErrorStatus: 400,
        handler: async ({ params, query, ctx }) => {
          const languages = languagesOf(ctx);
          const group = await groupBySlugOrId(db, params.slug_or_id, languages);
          if (!query.include.size) return group;
          return new Compound(group, [related(sportView, await sportsByIds(db, group.sports, languages))]);
        },
      });

    // ---- RECOMMENDATIONS (api/catalogue/recommendations.ts belongs to the recommendations module) ----
    // It adds `/sports/{sport_id}/recommendations[/{location}]` to this router: same prefix,
    // JSON:API errors and HTTP caching as the rest of the catalogue.
    addRecommendationRoutes(router, app);
    // ---- end of recommendations ----

    return [router.router];
  },
};
