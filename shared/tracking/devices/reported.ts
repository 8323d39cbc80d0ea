import type { Db } from '../../db/database.ts';
import { conflictError, type FieldError, invalid } from '../../errors.ts';
import { iri, parseIntegerIri } from '../iri.ts';
import { SERIAL_PATTERN } from './store.ts';

/**
 * The device an activity's `location.device` block reports (`{firmware, model, sn}`, the spec's
 * POST /v2/activities body): the caller's device of that model and serial, registered for them
 * when they have none yet (docs/tracking-activities.md, "The device block").
 */

/** A device as the block names it, its references taken from their IRIs or ids. */
export interface ReportedDevice {
  modelId: number;
  /** Needed only to register the device. */
  firmwareId: number | null;
  serial: string;
}

/** The block as the body sends it: each member an IRI, an integer id (number or digits), or null. */
export interface DeviceBlock {
  firmware?: string | number | null | undefined;
  model?: string | number | null | undefined;
  sn?: string | null | undefined;
}

const MAX_ID = 2_147_483_647;

/** `/v2/firmware/{id}` (the v2.26 path) names the same firmware as `/v2/firmwares/{id}`. */
const firmwareAlias = (value: string) => value.replace(/^((?:https?:\/\/[^/]+)?\/v2\/)firmware\//i, '$1firmwares/');

/**
 * The id a block member names: an integer (1 to 2^31-1), the same as digits, or the IRI of that
 * collection (path or absolute URL). Undefined when it is none of these.
 */
export function deviceReferenceId(
  value: string | number,
  collection: 'device_models' | 'firmwares',
): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 1 && value <= MAX_ID ? value : undefined;
  if (/^\d+$/.test(value)) return parseIntegerIri(iri(collection, value), collection);
  return parseIntegerIri(collection === 'firmwares' ? firmwareAlias(value) : value, collection);
}

/**
 * The device a block reports, or null when it reports none (no block, or every member null).
 * A block naming a device needs its model and serial; each problem names its member under `path`.
 */
export function reportedDeviceOf(
  block: DeviceBlock | null | undefined,
  path: string,
): { device: ReportedDevice | null; errors: FieldError[] } {
  const none = { device: null, errors: [] };
  if (!block) return none;
  const { model, firmware, sn } = block;
  if ((model ?? null) === null && (firmware ?? null) === null && (sn ?? null) === null) return none;
  const errors: FieldError[] = [];
  const modelId = model == null ? undefined : deviceReferenceId(model, 'device_models');
  const firmwareId = firmware == null ? null : deviceReferenceId(firmware, 'firmwares');
  if (model == null) errors.push({ path: `${path}.model`, message: 'is required to find or register the device' });
  else if (modelId === undefined)
    errors.push({
      path: `${path}.model`,
      message: 'must be the IRI or the id of a DeviceModel, such as /v2/device_models/1 or 1',
    });
  if (firmwareId === undefined)
    errors.push({
      path: `${path}.firmware`,
      message: 'must be the IRI or the id of a Firmware, such as /v2/firmwares/1 or 1',
    });
  if (sn == null) errors.push({ path: `${path}.sn`, message: 'is required to find or register the device' });
  else if (!SERIAL_PATTERN.test(sn))
    errors.push({ path: `${path}.sn`, message: 'must be 1 to 128 characters among a-z, A-Z, 0-9 and "-"' });
  if (errors.length || modelId === undefined || firmwareId === undefined || sn == null) return { device: null, errors };
  return { device: { modelId, firmwareId, serial: sn }, errors };
}

/** The references of a reported device that do not exist, or a firmware of another model. */
async function referenceErrors(db: Db, device: ReportedDevice, path: string): Promise<FieldError[]> {
  const [model, firmware] = await Promise.all([
    db.selectFrom('device_models').select('id').where('id', '=', device.modelId).executeTakeFirst(),
    device.firmwareId === null
      ? undefined
      : db.selectFrom('firmwares').select(['id', 'model_id']).where('id', '=', device.firmwareId).executeTakeFirst(),
  ]);
  const errors: FieldError[] = [];
  if (!model) errors.push({ path: `${path}.model`, message: `${iri('device_models', device.modelId)} does not exist` });
  if (device.firmwareId !== null && !firmware)
    errors.push({ path: `${path}.firmware`, message: `${iri('firmwares', device.firmwareId)} does not exist` });
  else if (model && firmware && firmware.model_id !== model.id)
    errors.push({
      path: `${path}.firmware`,
      message: `${iri('firmwares', firmware.id)} is a firmware of ${iri('device_models', firmware.model_id)}, not of ${iri('device_models', model.id)}`,
    });
  return errors;
}

/** The caller's device of that model and serial (the index user_devices_user_model_serial_key). */
const deviceIdOf = async (db: Db, userId: string, device: ReportedDevice) =>
  (
    await db
      .selectFrom('user_devices')
      .select('id')
      .where('user_id', '=', userId)
      .where('model_id', '=', device.modelId)
      .where('serial', '=', device.serial)
      .executeTakeFirst()
  )?.id;

/**
 * The id of the caller's device the block reports: found by model and serial among the caller's
 * devices only (another user's device with that serial is theirs), else registered for the caller
 * with the block's firmware. A found device keeps its firmware (a late upload of an old activity
 * must not roll it back). With `mustBe` (the body's `userDevice`), the block must name that device
 * and nothing is registered. Broken rules are 422s naming the block's member under `path`.
 */
export async function resolveReportedDevice(
  db: Db,
  userId: string,
  device: ReportedDevice,
  path: string,
  mustBe: string | null = null,
): Promise<string> {
  const errors = await referenceErrors(db, device, path);
  if (errors.length) throw invalid(errors);
  const found = await deviceIdOf(db, userId, device);
  if (mustBe !== null) {
    if (found === mustBe) return found;
    const named = found ? `names ${iri('user_devices', found)}` : 'names none of your devices';
    throw invalid([{ path, message: `${named}: it must name the userDevice, ${iri('user_devices', mustBe)}` }]);
  }
  if (found) return found;
  if (device.firmwareId === null)
    throw invalid([{ path: `${path}.firmware`, message: 'is required to register a device you do not have yet' }]);
  // Two creates reporting the same new device at once register it once: the other one finds it
  // (and registers it anew if it was deleted in between).
  for (let round = 0; round < 3; round++) {
    const registered = await db
      .insertInto('user_devices')
      .values({
        user_id: userId,
        serial: device.serial,
        model_id: device.modelId,
        firmware_id: device.firmwareId,
        last_connected_at: null,
      })
      .onConflict((oc) => oc.columns(['user_id', 'model_id', 'serial']).doNothing())
      .returning('id')
      .executeTakeFirst();
    const id = registered?.id ?? (await deviceIdOf(db, userId, device));
    if (id !== undefined) return id;
  }
  throw conflictError('The reported device was deleted each time it was registered: send the activity again');
}
