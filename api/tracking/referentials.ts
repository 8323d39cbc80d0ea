import { z } from 'zod';
import { formatDateTime } from '../../shared/tracking/dates.ts';
import { iri, iriOrNull } from '../../shared/tracking/iri.ts';
import {
  type ConnectorRow,
  connectorById,
  connectorPage,
  type DatatypeRow,
  type DeviceModelRow,
  datatypeById,
  datatypePage,
  deviceModelById,
  deviceModelPage,
  type FirmwareRow,
  type Found,
  firmwareById,
  firmwarePage,
  type PageRequest,
  type SportRow,
  sportById,
  sportPage,
  type UniverseRow,
  universeById,
  universePage,
} from '../../shared/tracking/referentials/store.ts';
import type { AppContext } from '../context.ts';
import type { HydraView, Page } from '../http/formats/format.ts';
import type { ApiRouter } from '../http/route.ts';
import {
  DEFAULT_PAGE_SIZE,
  integerRefOf,
  listFilterOf,
  listFilterShape,
  MAX_PAGE_SIZE,
  pagingShape,
} from './schemas.ts';
import { trackingResource } from './tracking-resource.ts';

const names = z.record(z.string(), z.string()).meta({
  description: 'language code to name',
  example: { en: 'Running', fr: 'Course à pied' },
});
const stamp = z.string().meta({ format: 'date-time' });
const iriField = (example: string) => z.string().meta({ format: 'iri-reference', example });
const stamps = (r: { created_at: Date; updated_at: Date }) => ({
  createdAt: formatDateTime(r.created_at),
  updatedAt: formatDateTime(r.updated_at),
});

/** `0`, `1`, `true` or `false` (the spec shows 0 and 1; API Platform's boolean filter takes both). */
const flag = z
  .enum(['0', '1', 'true', 'false'])
  .transform((v) => v === '1' || v === 'true')
  .optional();

const activeQuery = z.object({
  active: flag.meta({ description: 'only the active (1) or the inactive (0) ones' }),
  ...pagingShape,
});

/** Referential ids are integers, not the service's default id. */
const numericIdParams = z.object({
  id: z
    .string()
    .regex(/^[1-9]\d{0,9}$/)
    .transform(Number)
    .pipe(z.number().max(2_147_483_647)),
});

const sportSchema = z.object({
  id: z.number().int(),
  translatedNames: names,
  universe: iriField('/v2/universes/4').nullable(),
  active: z.boolean(),
  createdAt: stamp,
  updatedAt: stamp,
});
const sportView: HydraView<SportRow, typeof sportSchema> = {
  type: 'Sport',
  path: '/v2/sports',
  id: (s) => String(s.id),
  fields: (s) => ({
    id: s.id,
    translatedNames: s.names,
    universe: iriOrNull('universes', s.universe_id),
    active: s.active,
    ...stamps(s),
  }),
};

const datatypeSchema = z.object({
  id: z.number().int(),
  unit: z.string(),
  translatedNames: names,
  translatedDescriptions: z.record(z.string(), z.string().nullable()),
  recordWay: z.number().int().meta({ description: 'how a record of it is kept (1: the highest value is the best)' }),
  cumulable: z.boolean().meta({ description: 'whether values of several activities add up' }),
  active: z.boolean(),
  createdAt: stamp,
  updatedAt: stamp,
});
const datatypeView: HydraView<DatatypeRow, typeof datatypeSchema> = {
  type: 'Datatype',
  path: '/v2/datatypes',
  id: (d) => String(d.id),
  fields: (d) => ({
    id: d.id,
    unit: d.unit,
    translatedNames: d.names,
    translatedDescriptions: d.descriptions,
    recordWay: d.record_way,
    cumulable: d.cumulable,
    active: d.active,
    ...stamps(d),
  }),
};

const universeSchema = z.object({
  id: z.number().int(),
  translatedNames: names,
  sports: z.array(iriField('/v2/sports/121')),
  active: z.boolean().meta({ description: 'true when one of its sports is active' }),
});
const universeView: HydraView<UniverseRow, typeof universeSchema> = {
  type: 'Universe',
  path: '/v2/universes',
  id: (u) => String(u.id),
  fields: (u) => ({
    id: u.id,
    translatedNames: u.names,
    sports: u.sports.map((id) => iri('sports', id)),
    active: u.active,
  }),
};

const deviceModelSchema = z.object({
  id: z.number().int(),
  translatedNames: names,
  brand: z.string(),
  serialRange: z.string().nullable(),
  active: z.boolean(),
  createdAt: stamp,
  updatedAt: stamp,
});
const deviceModelView: HydraView<DeviceModelRow, typeof deviceModelSchema> = {
  type: 'DeviceModel',
  path: '/v2/device_models',
  id: (m) => String(m.id),
  fields: (m) => ({
    id: m.id,
    translatedNames: m.names,
    brand: m.brand,
    serialRange: m.serial_range,
    active: m.active,
    ...stamps(m),
  }),
};

const firmwareSchema = z.object({
  id: z.number().int(),
  model: iriField('/v2/device_models/1'),
  version: z.string(),
  revisionDate: stamp.nullable(),
  isLastFirmware: z.boolean(),
  active: z.boolean(),
  createdAt: stamp,
  updatedAt: stamp,
});
const firmwareView: HydraView<FirmwareRow, typeof firmwareSchema> = {
  type: 'Firmware',
  path: '/v2/firmwares',
  id: (f) => String(f.id),
  fields: (f) => ({
    id: f.id,
    model: iri('device_models', f.model_id),
    version: f.version,
    revisionDate: f.revision_date && formatDateTime(f.revision_date),
    isLastFirmware: f.is_last_firmware,
    active: f.active,
    ...stamps(f),
  }),
};
const firmwareQuery = activeQuery.extend({
  isLastFirmware: flag.meta({ description: 'only the latest firmware of each model (1) or the older ones (0)' }),
  ...listFilterShape('model', integerRefOf('device_models')),
});

const connectorSchema = z.object({
  id: z.number().int(),
  translatedNames: names,
  connector: z.string(),
  version: z.string().nullable(),
  active: z.boolean(),
  createdAt: stamp,
  updatedAt: stamp,
});
const connectorView: HydraView<ConnectorRow, typeof connectorSchema> = {
  type: 'Connector',
  path: '/v2/connectors',
  id: (c) => String(c.id),
  fields: (c) => ({
    id: c.id,
    translatedNames: c.names,
    connector: c.connector,
    version: c.version,
    active: c.active,
    ...stamps(c),
  }),
};

const asPage = async <T>(found: Promise<Found<T>>, p: PageRequest): Promise<Page<T>> => {
  const { items, total } = await found;
  return { items, total, page: p.page, limit: p.limit };
};

/** One read-only referential: its paged list (in id order) and its items. */
function referential<Q extends typeof activeQuery, T, S extends z.ZodObject>(
  router: ApiRouter,
  app: AppContext,
  o: {
    path: string;
    what: string;
    view: HydraView<T, S>;
    item: S;
    query: Q;
    page: (query: z.output<Q>) => Promise<Found<T>>;
    byId: (id: number) => Promise<T>;
    description?: string;
  },
): void {
  trackingResource(router, app, {
    path: o.path,
    itemParams: numericIdParams,
    item: o.item,
    hydra: o.view,
    caller: null,
    notFound: `No such ${o.what}`,
    tag: 'tracking referentials',
  })
    .list({
      summary: `The ${o.what} referential`,
      description: [
        o.description,
        `In id order, ${DEFAULT_PAGE_SIZE} per page by default (\`limit\` up to ${MAX_PAGE_SIZE}), with \`hydra:totalItems\`.`,
      ]
        .filter(Boolean)
        .join('\n\n'),
      query: o.query,
      handler: ({ query }) => asPage(o.page(query), query),
    })
    .get({ summary: `One ${o.what}`, handler: ({ params }) => o.byId(params.id) });
}

/** The read-only referentials: sports, datatypes, universes, device models, firmwares, connectors. */
export function referentialResources(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  referential(router, app, {
    path: '/sports',
    what: 'sport',
    view: sportView,
    item: sportSchema,
    query: activeQuery,
    description: 'The sports every service shares (same ids as the places and the catalogue), names in every language.',
    page: (q) => sportPage(db, q, q),
    byId: (id) => sportById(db, id),
  });
  referential(router, app, {
    path: '/datatypes',
    what: 'datatype',
    view: datatypeView,
    item: datatypeSchema,
    query: activeQuery,
    description: 'The units and measures of activities, measures and records.',
    page: (q) => datatypePage(db, q, q),
    byId: (id) => datatypeById(db, id),
  });
  referential(router, app, {
    path: '/universes',
    what: 'universe',
    view: universeView,
    item: universeSchema,
    query: activeQuery,
    description: 'The families of sports, each with the IRIs of its sports.',
    page: (q) => universePage(db, q, q),
    byId: (id) => universeById(db, id),
  });
  referential(router, app, {
    path: '/device_models',
    what: 'device model',
    view: deviceModelView,
    item: deviceModelSchema,
    query: activeQuery,
    page: (q) => deviceModelPage(db, q, q),
    byId: (id) => deviceModelById(db, id),
  });
  // `/v2/firmwares` is the spec's IRI; `/v2/firmware` is the path of the v2.26 OpenAPI, served
  // the same so its clients work. Either way the items' IRIs are `/v2/firmwares/{id}`.
  for (const path of ['/firmwares', '/firmware'])
    referential(router, app, {
      path,
      what: 'firmware',
      view: firmwareView,
      item: firmwareSchema,
      query: firmwareQuery,
      description:
        path === '/firmware' ? 'The same as `/v2/firmwares` (the v2.26 path).' : 'The firmwares of each device model.',
      page: (q) => firmwarePage(db, { ...q, modelIds: listFilterOf<number>(q, 'model') }, q),
      byId: (id) => firmwareById(db, id),
    });
  referential(router, app, {
    path: '/connectors',
    what: 'connector',
    view: connectorView,
    item: connectorSchema,
    query: activeQuery,
    description: 'How activities reach the service (mobile app, file import, sync...).',
    page: (q) => connectorPage(db, q, q),
    byId: (id) => connectorById(db, id),
  });
}
