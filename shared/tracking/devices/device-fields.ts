import { formatDateTime } from '../dates.ts';
import { iri } from '../iri.ts';
import type { UserDeviceRow } from './store.ts';

/** The members of a UserDevice node, as /v2/user_devices answers them (and the personal-data export). */
export const deviceFields = (d: UserDeviceRow) => ({
  id: d.id,
  serial: d.serial,
  model: iri('device_models', d.model_id),
  firmware: iri('firmwares', d.firmware_id),
  user: iri('users', d.user_id),
  ownership: d.ownership,
  lastConnectedAt: d.last_connected_at && formatDateTime(d.last_connected_at),
  createdAt: formatDateTime(d.created_at),
  updatedAt: formatDateTime(d.updated_at),
});
