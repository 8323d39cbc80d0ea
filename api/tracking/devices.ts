import { z } from 'zod';
import { deviceFields } from '../../shared/tracking/devices/device-fields.ts';
import {
  createUserDevice,
  DEVICE_ORDERS,
  deleteUserDevice,
  SERIAL_PATTERN,
  type UserDeviceRow,
  updateUserDevice,
  userDeviceOf,
  userDevicePage,
} from '../../shared/tracking/devices/store.ts';
import { iri } from '../../shared/tracking/iri.ts';
import type { AppContext } from '../context.ts';
import type { HydraView } from '../http/formats/format.ts';
import type { ApiRouter } from '../http/route.ts';
import {
  dateFilterOf,
  dateFilterShape,
  dateTime,
  integerIriOf,
  integerRefOf,
  iriOf,
  listFilterOf,
  listFilterShape,
  orderOf,
  orderShape,
  pagingShape,
  refOf,
  writeBody,
} from './schemas.ts';
import { trackingResource } from './tracking-resource.ts';

const deviceSchema = z.object({
  id: z.string(),
  serial: z.string(),
  model: z.string().meta({ format: 'iri-reference', example: '/v2/device_models/1' }),
  firmware: z.string().meta({ format: 'iri-reference', example: '/v2/firmwares/2' }),
  user: z.string().meta({ format: 'iri-reference' }),
  ownership: z.number().int(),
  lastConnectedAt: z.string().nullable().meta({ format: 'date-time' }),
  createdAt: z.string().meta({ format: 'date-time' }),
  updatedAt: z.string().meta({ format: 'date-time' }),
});

const deviceView: HydraView<UserDeviceRow, typeof deviceSchema> = {
  type: 'UserDevice',
  path: '/v2/user_devices',
  id: (d) => d.id,
  fields: deviceFields,
};

/** `/v2/firmware/{id}` (the v2.26 path, served as an alias) names the same firmware as `/v2/firmwares/{id}`. */
const firmwareAlias = (value: string) => value.replace(/^((?:https?:\/\/[^/]+)?\/v2\/)firmware\//i, '$1firmwares/');

const serial = z.string().meta({ description: '1 to 128 of a-z, A-Z, 0-9 and -', example: 'SN-0042' });
const ownership = z.number().int().meta({ description: 'an integer from 0 to 2147483647 (default 0)' });
const writable = {
  serial,
  model: integerIriOf('device_models'),
  firmware: z.string().transform(firmwareAlias).pipe(integerIriOf('firmwares')),
  user: iriOf('users').optional().meta({ description: "the caller's IRI (the default)" }),
  ownership: ownership.optional(),
  lastConnectedAt: dateTime.nullable().optional(),
};
const readOnly = ['id', 'createdAt', 'updatedAt'];
const createBody = writeBody('UserDevice', writable, readOnly);
const updateBody = writeBody(
  'UserDevice',
  { ...writable, serial: serial.optional(), model: writable.model.optional(), firmware: writable.firmware.optional() },
  readOnly,
);

const listQuery = z.object({
  ...listFilterShape('user', refOf('users')),
  ...listFilterShape('serial', z.string().regex(SERIAL_PATTERN, 'must be 1 to 128 of a-z, A-Z, 0-9 and -')),
  ...listFilterShape('model', integerRefOf('device_models')),
  ...listFilterShape('firmware', z.string().transform(firmwareAlias).pipe(integerRefOf('firmwares'))),
  ...dateFilterShape('updatedAt'),
  ...orderShape(DEVICE_ORDERS),
  ...pagingShape,
});

const deviceParams = z.object({ id: z.string().min(1).max(64) });

/** /v2/user_devices: the caller's devices (another user's device is "not found"). */
export function devicesResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  trackingResource(router, app, {
    path: '/user_devices',
    itemParams: deviceParams,
    item: deviceSchema,
    hydra: deviceView,
    notFound: 'No such device (a caller sees only their own)',
    tag: 'tracking devices',
  })
    .list({
      summary: "The caller's devices",
      description:
        'Oldest first, or by last change with `order[updatedAt]=asc|desc` (ties by id). Filters (each also as `name[]`, several values match any): `user` (only the caller has devices here: another user finds none), `serial`, `model`, `firmware` (IRIs or ids); `updatedAt[after|before|strictly_after|strictly_before]` (syncing: docs/tracking-sync.md).',
      query: listQuery,
      handler: async ({ query, ctx, caller, principal }) => {
        const { items, total } = await app.reads.read(principal.accountId, ({ db }) =>
          userDevicePage(
            db,
            caller,
            {
              userIds: listFilterOf<string>(query, 'user'),
              serials: listFilterOf<string>(query, 'serial'),
              modelIds: listFilterOf<number>(query, 'model'),
              firmwareIds: listFilterOf<number>(query, 'firmware'),
              updatedAt: dateFilterOf(query, 'updatedAt'),
              order: orderOf(query, ctx.querystring, DEVICE_ORDERS),
            },
            query,
          ),
        );
        return { items, total, page: query.page, limit: query.limit };
      },
    })
    .create({
      summary: 'Register a device',
      description:
        "`serial`, `model` and `firmware` (a firmware of that model) are required; `user`, when sent, must be the caller's IRI. A user registers a model and serial once (422 on `serial` naming the device already there).",
      body: createBody,
      handler: async ({ body, caller }) =>
        createUserDevice(db, caller, {
          serial: body.serial,
          modelId: body.model,
          firmwareId: body.firmware,
          userId: body.user,
          ownership: body.ownership,
          lastConnectedAt: body.lastConnectedAt,
        }),
      location: (d) => iri('user_devices', d.id),
    })
    .get({
      summary: 'One device of the caller',
      handler: async ({ params, caller }) => userDeviceOf(db, caller, params.id),
    })
    .update({
      summary: 'Change a device of the caller',
      description:
        'Fields not sent stay as they are; a new `model` needs a `firmware` of that model. Read-only fields are ignored, unknown ones are a 422.',
      body: updateBody,
      handler: async ({ params, body, caller }) =>
        updateUserDevice(db, caller, params.id, {
          serial: body.serial,
          modelId: body.model,
          firmwareId: body.firmware,
          userId: body.user,
          ownership: body.ownership,
          lastConnectedAt: body.lastConnectedAt,
        }),
    })
    .remove({
      summary: 'Delete a device of the caller',
      description: 'Its activities stay, with `userDevice` null. Answers 204.',
      handler: async ({ params, caller }) => deleteUserDevice(db, caller, params.id),
    });
}
