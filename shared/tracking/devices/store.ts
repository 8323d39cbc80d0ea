import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { type DateBounds, type Found, type PageRequest, pageOf, whereDateBounds } from '../../db/paging.ts';
import type { UserDevicesTable } from '../../db/schema/tracking.ts';
import { type FieldError, invalid, notFoundError } from '../../errors.ts';
import { iri } from '../iri.ts';

/**
 * A user's devices (`/v2/user_devices`): each is a model of the referential with one of that
 * model's firmwares and the device's serial number. A user sees and changes only their own.
 */

export type UserDeviceRow = Selectable<UserDevicesTable>;

/** The spec's serial characters, 1 to 128 of them (the column's check says the same). */
export const SERIAL_PATTERN = /^[A-Za-z0-9-]{1,128}$/;
/** `ownership` is stored as a PostgreSQL integer. */
export const MAX_OWNERSHIP = 2_147_483_647;

/** Who the rules apply for: the calling tracking user. */
export interface DeviceOwner {
  id: string;
}

/** A device as a client describes it (ids already taken from their IRIs). */
export interface DeviceInput {
  serial: string;
  modelId: number;
  firmwareId: number;
  /** The user the body names, when it names one: it must be the caller. */
  userId?: string | undefined;
  ownership?: number | undefined;
  lastConnectedAt?: Date | null | undefined;
}

export type DeviceChanges = Partial<DeviceInput>;

/** The rules a device must follow, each broken one naming its body field. */
async function deviceErrors(db: Db, owner: DeviceOwner, device: DeviceChanges, changed: DeviceChanges) {
  const errors: FieldError[] = [];
  const err = (field: string, message: string) => errors.push({ path: `body.${field}`, message });
  if (changed.userId !== undefined && changed.userId !== owner.id)
    err('user', `must be the caller's IRI (${iri('users', owner.id)}): a device is registered by its own user`);
  if (changed.serial !== undefined && !SERIAL_PATTERN.test(changed.serial))
    err('serial', 'must be 1 to 128 characters among a-z, A-Z, 0-9 and "-"');
  if (
    changed.ownership !== undefined &&
    !(Number.isInteger(changed.ownership) && changed.ownership >= 0 && changed.ownership <= MAX_OWNERSHIP)
  )
    err('ownership', `must be an integer from 0 to ${MAX_OWNERSHIP}`);
  const [model, firmware] = await Promise.all([
    device.modelId === undefined
      ? undefined
      : db.selectFrom('device_models').select('id').where('id', '=', device.modelId).executeTakeFirst(),
    device.firmwareId === undefined
      ? undefined
      : db.selectFrom('firmwares').select(['id', 'model_id']).where('id', '=', device.firmwareId).executeTakeFirst(),
  ]);
  if (device.modelId !== undefined && !model) err('model', `${iri('device_models', device.modelId)} does not exist`);
  if (device.firmwareId !== undefined && !firmware)
    err('firmware', `${iri('firmwares', device.firmwareId)} does not exist`);
  else if (model && firmware && firmware.model_id !== model.id && (changed.modelId ?? changed.firmwareId) !== undefined)
    err(
      'firmware',
      `${iri('firmwares', firmware.id)} is a firmware of ${iri('device_models', firmware.model_id)}, not of ${iri('device_models', model.id)}`,
    );
  return errors;
}

const isSerialTaken = (e: unknown) =>
  (e as { code?: string; constraint?: string }).code === '23505' &&
  (e as { constraint?: string }).constraint === 'user_devices_user_model_serial_key';

/** The 422 of a second device with the same model and serial, naming the one already there. */
async function serialTaken(db: Db, owner: DeviceOwner, modelId: number, serial: string) {
  const existing = await db
    .selectFrom('user_devices')
    .select('id')
    .where('user_id', '=', owner.id)
    .where('model_id', '=', modelId)
    .where('serial', '=', serial)
    .executeTakeFirst();
  return invalid([
    {
      path: 'body.serial',
      message: `a device of ${iri('device_models', modelId)} with serial "${serial}" is already registered${existing ? `: ${iri('user_devices', existing.id)}` : ''}`,
    },
  ]);
}

/** Registers a device of the caller. */
export async function createUserDevice(db: Db, owner: DeviceOwner, input: DeviceInput): Promise<UserDeviceRow> {
  const errors = await deviceErrors(db, owner, input, input);
  if (errors.length) throw invalid(errors);
  try {
    return await db
      .insertInto('user_devices')
      .values({
        user_id: owner.id,
        serial: input.serial,
        model_id: input.modelId,
        firmware_id: input.firmwareId,
        ownership: input.ownership ?? 0,
        last_connected_at: input.lastConnectedAt ?? null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  } catch (e) {
    if (isSerialTaken(e)) throw await serialTaken(db, owner, input.modelId, input.serial);
    throw e;
  }
}

/** One device of the caller; another user's device, or none, is "not found". */
export async function userDeviceOf(db: Db, owner: DeviceOwner, id: string): Promise<UserDeviceRow> {
  const device = await db
    .selectFrom('user_devices')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', owner.id)
    .executeTakeFirst();
  if (!device) throw notFoundError(`No user device ${id}`);
  return device;
}

export const DEVICE_ORDERS = ['updatedAt'] as const;
export type DeviceOrder = { prop: (typeof DEVICE_ORDERS)[number]; direction: 'asc' | 'desc' };

/** List filters; each keeps the devices matching any of its values. */
export interface DeviceFilter {
  userIds?: string[] | undefined;
  serials?: string[] | undefined;
  modelIds?: number[] | undefined;
  firmwareIds?: number[] | undefined;
  /** The change feed (docs/tracking-sync.md). */
  updatedAt?: DateBounds;
  /** Oldest first when empty; ties by id in the first order's direction (one index scan). */
  order?: DeviceOrder[];
}

/**
 * The caller's devices matching `filter`, oldest first unless ordered, without paging: a `user`
 * filter naming only other users finds none. Indexes (user_id, created_at, id) and, for the
 * change feed, (user_id, updated_at, id).
 */
export function userDevicesQuery(db: Db, owner: DeviceOwner, filter: DeviceFilter) {
  let q = db.selectFrom('user_devices').selectAll().where('user_id', '=', owner.id);
  if (filter.userIds && !filter.userIds.includes(owner.id)) q = q.where(sql<boolean>`false`);
  if (filter.serials) q = q.where('serial', '=', sql<string>`any(${filter.serials}::text[])`);
  if (filter.modelIds) q = q.where('model_id', '=', sql<number>`any(${filter.modelIds}::int[])`);
  if (filter.firmwareIds) q = q.where('firmware_id', '=', sql<number>`any(${filter.firmwareIds}::int[])`);
  q = whereDateBounds(q, 'updated_at', filter.updatedAt);
  const first = filter.order?.[0];
  return first
    ? q.orderBy('updated_at', first.direction).orderBy('id', first.direction)
    : q.orderBy('created_at').orderBy('id');
}

/** One page of the caller's devices and how many match in all. */
export function userDevicePage(
  db: Db,
  owner: DeviceOwner,
  filter: DeviceFilter,
  p: PageRequest,
): Promise<Found<UserDeviceRow>> {
  return pageOf(userDevicesQuery(db, owner, filter), p);
}

/**
 * Applies a PUT of a device: fields not sent stay as they are (API Platform's PUT). A new model
 * needs a firmware of that model (send both when the current firmware is not one).
 */
export async function updateUserDevice(
  db: Db,
  owner: DeviceOwner,
  id: string,
  changes: DeviceChanges,
): Promise<UserDeviceRow> {
  const current = await userDeviceOf(db, owner, id);
  const device: DeviceInput = {
    serial: changes.serial ?? current.serial,
    modelId: changes.modelId ?? current.model_id,
    firmwareId: changes.firmwareId ?? current.firmware_id,
  };
  const errors = await deviceErrors(db, owner, device, changes);
  if (errors.length) throw invalid(errors);
  try {
    const updated = await db
      .updateTable('user_devices')
      .set({
        serial: device.serial,
        model_id: device.modelId,
        firmware_id: device.firmwareId,
        ...(changes.ownership !== undefined ? { ownership: changes.ownership } : {}),
        ...(changes.lastConnectedAt !== undefined ? { last_connected_at: changes.lastConnectedAt } : {}),
        updated_at: sql<Date>`now()`,
      })
      .where('id', '=', id)
      .where('user_id', '=', owner.id)
      .returningAll()
      .executeTakeFirst();
    // Deleted between the read and the write.
    if (!updated) throw notFoundError(`No user device ${id}`);
    return updated;
  } catch (e) {
    if (isSerialTaken(e)) throw await serialTaken(db, owner, device.modelId, device.serial);
    throw e;
  }
}

/**
 * Deletes a device of the caller; its activities stay, without a device (`userDevice` null). They
 * are changed here rather than by the foreign key's `set null`, so that their `updatedAt` moves
 * and sync clients see the change (docs/tracking-sync.md).
 */
export async function deleteUserDevice(db: Db, owner: DeviceOwner, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    // Locked first: an activity naming the device cannot be stored meanwhile (its key check waits).
    const device = await trx
      .selectFrom('user_devices')
      .select('id')
      .where('id', '=', id)
      .where('user_id', '=', owner.id)
      .forUpdate()
      .executeTakeFirst();
    if (!device) throw notFoundError(`No user device ${id}`);
    await trx
      .updateTable('activities')
      .set({ user_device_id: null, updated_at: sql<Date>`now()` })
      .where('user_id', '=', owner.id)
      .where('user_device_id', '=', id)
      .execute();
    await trx.deleteFrom('user_devices').where('id', '=', id).where('user_id', '=', owner.id).execute();
  });
}
