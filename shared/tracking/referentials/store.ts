import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { type Found, type PageRequest, pageOf } from '../../db/paging.ts';
import type { LocalizedNames } from '../../db/schema/referentials.ts';
import { notFoundError } from '../../errors.ts';

/**
 * The read-only referentials of the tracking service: sports (the one sports referential every
 * service shares), datatypes, universes, device models, firmwares and connectors. Each list is in
 * id order, paged, and counted (these tables hold tens to a few hundred rows).
 */

// Still imported from here by the API layer.
export type { Found, PageRequest };

/** Filters every referential list has: `active`, when given, keeps the rows with that flag. */
export interface ActiveFilter {
  active?: boolean | undefined;
}

async function one<T>(row: Promise<T | undefined>, what: string, id: number): Promise<T> {
  const found = await row;
  if (!found) throw notFoundError(`No ${what} ${id}`);
  return found;
}

export interface SportRow {
  id: number;
  names: LocalizedNames;
  universe_id: number | null;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

const sports = (db: Db) =>
  db.selectFrom('sports').select(['id', 'names', 'universe_id', 'active', 'created_at', 'updated_at']).orderBy('id');

export function sportPage(db: Db, filter: ActiveFilter, p: PageRequest): Promise<Found<SportRow>> {
  let q = sports(db);
  if (filter.active !== undefined) q = q.where('active', '=', filter.active);
  return pageOf(q, p);
}

export function sportById(db: Db, id: number): Promise<SportRow> {
  return one(sports(db).where('id', '=', id).executeTakeFirst(), 'sport', id);
}

export interface DatatypeRow {
  id: number;
  unit: string;
  names: LocalizedNames;
  descriptions: Record<string, string | null>;
  record_way: number;
  cumulable: boolean;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

const datatypes = (db: Db) =>
  db
    .selectFrom('datatypes')
    .select(['id', 'unit', 'names', 'descriptions', 'record_way', 'cumulable', 'active', 'created_at', 'updated_at'])
    .orderBy('id');

export function datatypePage(db: Db, filter: ActiveFilter, p: PageRequest): Promise<Found<DatatypeRow>> {
  let q = datatypes(db);
  if (filter.active !== undefined) q = q.where('active', '=', filter.active);
  return pageOf(q, p);
}

export function datatypeById(db: Db, id: number): Promise<DatatypeRow> {
  return one(datatypes(db).where('id', '=', id).executeTakeFirst(), 'datatype', id);
}

export interface UniverseRow {
  id: number;
  names: LocalizedNames;
  /** Ids of its sports, ascending. */
  sports: number[];
  /** A universe has no flag of its own: it is active when one of its sports is. */
  active: boolean;
}

const hasActiveSport = sql<boolean>`exists (select 1 from sports s where s.universe_id = u.id and s.active)`;

const universes = (db: Db) =>
  db
    .selectFrom('universes as u')
    .select([
      'u.id',
      'u.names',
      sql<number[]>`array(select s.id from sports s where s.universe_id = u.id order by s.id)`.as('sports'),
      hasActiveSport.as('active'),
    ])
    .orderBy('u.id');

export function universePage(db: Db, filter: ActiveFilter, p: PageRequest): Promise<Found<UniverseRow>> {
  let q = universes(db);
  if (filter.active !== undefined) q = q.where(hasActiveSport, '=', filter.active);
  return pageOf(q, p);
}

export function universeById(db: Db, id: number): Promise<UniverseRow> {
  return one(universes(db).where('u.id', '=', id).executeTakeFirst(), 'universe', id);
}

export interface DeviceModelRow {
  id: number;
  names: LocalizedNames;
  brand: string;
  serial_range: string | null;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

const deviceModels = (db: Db) =>
  db
    .selectFrom('device_models')
    .select(['id', 'names', 'brand', 'serial_range', 'active', 'created_at', 'updated_at'])
    .orderBy('id');

export function deviceModelPage(db: Db, filter: ActiveFilter, p: PageRequest): Promise<Found<DeviceModelRow>> {
  let q = deviceModels(db);
  if (filter.active !== undefined) q = q.where('active', '=', filter.active);
  return pageOf(q, p);
}

export function deviceModelById(db: Db, id: number): Promise<DeviceModelRow> {
  return one(deviceModels(db).where('id', '=', id).executeTakeFirst(), 'device model', id);
}

export interface FirmwareRow {
  id: number;
  model_id: number;
  version: string;
  revision_date: Date | null;
  is_last_firmware: boolean;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface FirmwareFilter extends ActiveFilter {
  isLastFirmware?: boolean | undefined;
  /** Firmwares of any of these models. */
  modelIds?: number[] | undefined;
}

const firmwares = (db: Db) =>
  db
    .selectFrom('firmwares')
    .select(['id', 'model_id', 'version', 'revision_date', 'is_last_firmware', 'active', 'created_at', 'updated_at'])
    .orderBy('id');

export function firmwarePage(db: Db, filter: FirmwareFilter, p: PageRequest): Promise<Found<FirmwareRow>> {
  let q = firmwares(db);
  if (filter.active !== undefined) q = q.where('active', '=', filter.active);
  if (filter.isLastFirmware !== undefined) q = q.where('is_last_firmware', '=', filter.isLastFirmware);
  if (filter.modelIds) q = q.where('model_id', '=', sql<number>`any(${filter.modelIds}::int[])`);
  return pageOf(q, p);
}

export function firmwareById(db: Db, id: number): Promise<FirmwareRow> {
  return one(firmwares(db).where('id', '=', id).executeTakeFirst(), 'firmware', id);
}

export interface ConnectorRow {
  id: number;
  names: LocalizedNames;
  connector: string;
  version: string | null;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

const connectors = (db: Db) =>
  db
    .selectFrom('connectors')
    .select(['id', 'names', 'connector', 'version', 'active', 'created_at', 'updated_at'])
    .orderBy('id');

export function connectorPage(db: Db, filter: ActiveFilter, p: PageRequest): Promise<Found<ConnectorRow>> {
  let q = connectors(db);
  if (filter.active !== undefined) q = q.where('active', '=', filter.active);
  return pageOf(q, p);
}

export function connectorById(db: Db, id: number): Promise<ConnectorRow> {
  return one(connectors(db).where('id', '=', id).executeTakeFirst(), 'connector', id);
}
