import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql, type Transaction } from 'kysely';
import type { Db } from './database.ts';
import type { Database } from './schema/index.ts';
import type { LocalizedNames, PlaceFilterType } from './schema/referentials.ts';
import { seedCities } from './seed-cities.ts';

/** The committed referential files (built from the team reference data by scripts/build-referentials.mjs; sources in shared/referentials/PROVENANCE.md). */
export const REFERENTIALS_DIR = fileURLToPath(new URL('../referentials/', import.meta.url));

interface SportFile {
  id: number;
  slug: string;
  names: LocalizedNames;
  parentId: number | null;
  universeId: number | null;
  active: boolean;
  /** Catalogue descriptions by language ({} when no source gives one). */
  descriptions: LocalizedNames;
  /** The catalogue's legacy id, when known. */
  vendorId: number | null;
  /** Catalogue tags. */
  tags: string[];
}
interface GroupFile {
  id: number;
  slug: string;
  names: LocalizedNames;
  sportIds: number[];
}
interface UniverseFile {
  id: number;
  names: LocalizedNames;
}
interface DatatypeFile {
  id: number;
  unit: string;
  names: LocalizedNames;
  descriptions: Record<string, string | null>;
  recordWay: number;
  cumulable: boolean;
  active: boolean;
}
interface TrackingDevicesFile {
  connectors: { id: number; connector: string; version: string | null; names: LocalizedNames }[];
  deviceModels: { id: number; brand: string; serialRange: string | null; names: LocalizedNames }[];
  firmwares: { id: number; modelId: number; version: string; revisionDate: string | null; isLastFirmware: boolean }[];
}
interface PlacesFile {
  tags: string[];
  filters: { slug: string; type: PlaceFilterType; values?: string[] }[];
  sports: Record<string, { tags: string[]; filters: string[] }>;
}

async function load<T>(file: string, dir: string): Promise<T> {
  return JSON.parse(await readFile(path.join(dir, file), 'utf8')) as T;
}

export interface SeedCounts {
  universes: number;
  sports: number;
  groups: number;
  datatypes: number;
  tags: number;
  filters: number;
}

/**
 * Loads the referentials, idempotently: rows are upserted by id, so re-running refreshes names
 * and flags. Per-sport allowed tags and filters are only added, never removed, because staff
 * edit them through the places API.
 */
export async function seedReferentials(db: Db, dir = REFERENTIALS_DIR): Promise<SeedCounts> {
  const [universes, sports, groups, datatypes, places, devices] = await Promise.all([
    load<UniverseFile[]>('universes.json', dir),
    load<SportFile[]>('sports.json', dir),
    load<GroupFile[]>('groups.json', dir),
    load<DatatypeFile[]>('datatypes.json', dir),
    load<PlacesFile>('places-tags-filters.json', dir),
    load<TrackingDevicesFile>('tracking-devices.json', dir),
  ]);
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('universes')
      .values(universes.map((u) => ({ id: u.id, names: JSON.stringify(u.names) })))
      .onConflict((oc) => oc.column('id').doUpdateSet({ names: (eb) => eb.ref('excluded.names') }))
      .execute();
    // Parents are set in a second pass so the order of the file does not matter.
    await trx
      .insertInto('sports')
      .values(
        sports.map((s) => ({
          id: s.id,
          slug: s.slug,
          names: JSON.stringify(s.names),
          parent_id: null,
          universe_id: s.universeId,
          active: s.active,
          description: s.descriptions.en ?? null,
          descriptions: JSON.stringify(s.descriptions),
          vendor_id: s.vendorId,
          tags: s.tags,
        })),
      )
      .onConflict((oc) =>
        oc.column('id').doUpdateSet((eb) => ({
          slug: eb.ref('excluded.slug'),
          names: eb.ref('excluded.names'),
          universe_id: eb.ref('excluded.universe_id'),
          active: eb.ref('excluded.active'),
          description: eb.ref('excluded.description'),
          descriptions: eb.ref('excluded.descriptions'),
          vendor_id: eb.ref('excluded.vendor_id'),
          tags: eb.ref('excluded.tags'),
          updated_at: sql<Date>`now()`,
        })),
      )
      .execute();
    for (const s of sports) {
      await trx.updateTable('sports').set({ parent_id: s.parentId }).where('id', '=', s.id).execute();
    }
    await trx
      .insertInto('sport_groups')
      .values(groups.map((g) => ({ id: g.id, slug: g.slug, names: JSON.stringify(g.names) })))
      .onConflict((oc) =>
        oc.column('id').doUpdateSet((eb) => ({ slug: eb.ref('excluded.slug'), names: eb.ref('excluded.names') })),
      )
      .execute();
    await trx.deleteFrom('sport_group_members').execute();
    const members = groups.flatMap((g) => g.sportIds.map((sportId) => ({ group_id: g.id, sport_id: sportId })));
    if (members.length) await trx.insertInto('sport_group_members').values(members).execute();
    await trx
      .insertInto('datatypes')
      .values(
        datatypes.map((d) => ({
          id: d.id,
          unit: d.unit,
          names: JSON.stringify(d.names),
          descriptions: JSON.stringify(d.descriptions),
          record_way: d.recordWay,
          cumulable: d.cumulable,
          active: d.active,
        })),
      )
      .onConflict((oc) =>
        oc.column('id').doUpdateSet((eb) => ({
          unit: eb.ref('excluded.unit'),
          names: eb.ref('excluded.names'),
          descriptions: eb.ref('excluded.descriptions'),
          record_way: eb.ref('excluded.record_way'),
          cumulable: eb.ref('excluded.cumulable'),
          active: eb.ref('excluded.active'),
          updated_at: sql<Date>`now()`,
        })),
      )
      .execute();
    await trx
      .insertInto('place_tags')
      .values(places.tags.map((slug) => ({ slug })))
      .onConflict((oc) => oc.column('slug').doNothing())
      .execute();
    await trx
      .insertInto('place_filters')
      .values(places.filters.map((f) => ({ slug: f.slug, type: f.type, values: f.values ?? null })))
      .onConflict((oc) =>
        oc.column('slug').doUpdateSet((eb) => ({ type: eb.ref('excluded.type'), values: eb.ref('excluded.values') })),
      )
      .execute();
    const allowedTags = Object.entries(places.sports).flatMap(([id, l]) =>
      l.tags.map((t) => ({ sport_id: Number(id), tag_slug: t })),
    );
    const allowedFilters = Object.entries(places.sports).flatMap(([id, l]) =>
      l.filters.map((f) => ({ sport_id: Number(id), filter_slug: f })),
    );
    if (allowedTags.length)
      await trx
        .insertInto('sport_place_tags')
        .values(allowedTags)
        .onConflict((oc) => oc.doNothing())
        .execute();
    if (allowedFilters.length)
      await trx
        .insertInto('sport_place_filters')
        .values(allowedFilters)
        .onConflict((oc) => oc.doNothing())
        .execute();
    await seedTrackingDevices(trx, devices);
  });
  await seedCities(db);
  return {
    universes: universes.length,
    sports: sports.length,
    groups: groups.length,
    datatypes: datatypes.length,
    tags: places.tags.length,
    filters: places.filters.length,
  };
}

/** Connectors, device models and firmwares of the tracking service, upserted by id. */
async function seedTrackingDevices(trx: Transaction<Database>, file: TrackingDevicesFile): Promise<void> {
  const touched = { updated_at: sql<Date>`now()` };
  await trx
    .insertInto('connectors')
    .values(
      file.connectors.map((c) => ({
        id: c.id,
        connector: c.connector,
        version: c.version,
        names: JSON.stringify(c.names),
      })),
    )
    .onConflict((oc) =>
      oc.column('id').doUpdateSet((eb) => ({
        connector: eb.ref('excluded.connector'),
        version: eb.ref('excluded.version'),
        names: eb.ref('excluded.names'),
        ...touched,
      })),
    )
    .execute();
  await trx
    .insertInto('device_models')
    .values(
      file.deviceModels.map((m) => ({
        id: m.id,
        brand: m.brand,
        serial_range: m.serialRange,
        names: JSON.stringify(m.names),
      })),
    )
    .onConflict((oc) =>
      oc.column('id').doUpdateSet((eb) => ({
        brand: eb.ref('excluded.brand'),
        serial_range: eb.ref('excluded.serial_range'),
        names: eb.ref('excluded.names'),
        ...touched,
      })),
    )
    .execute();
  await trx
    .insertInto('firmwares')
    .values(
      file.firmwares.map((f) => ({
        id: f.id,
        model_id: f.modelId,
        version: f.version,
        revision_date: f.revisionDate ? new Date(f.revisionDate) : null,
        is_last_firmware: f.isLastFirmware,
      })),
    )
    .onConflict((oc) =>
      oc.column('id').doUpdateSet((eb) => ({
        model_id: eb.ref('excluded.model_id'),
        version: eb.ref('excluded.version'),
        revision_date: eb.ref('excluded.revision_date'),
        is_last_firmware: eb.ref('excluded.is_last_firmware'),
        ...touched,
      })),
    )
    .execute();
}
