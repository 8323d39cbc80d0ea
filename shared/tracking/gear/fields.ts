import { formatDateTime } from '../dates.ts';
import { iri } from '../iri.ts';
import type { EquipmentRow } from './store.ts';

/**
 * The gear's totals as v2.26's sum-ups: one per datatype (distance 5, duration 24, moving time 30,
 * ascent 18, activity count 98), each a fragment of the document GET /v2/user_equipments/{id}/sumups.
 */
export const EQUIPMENT_SUMUP_DATATYPES = [5, 24, 30, 18, 98] as const;

/** A gear total as /v2/user_equipments/{id}/sumups lists it. */
export interface EquipmentSumup {
  equipmentId: string;
  datatypeId: (typeof EQUIPMENT_SUMUP_DATATYPES)[number];
  value: number;
  updatedAt: Date;
}

/** The IRI of one of the gear's sum-ups. */
export const equipmentSumupIri = (equipmentId: string, datatypeId: number) =>
  `${iri('user_equipments', equipmentId)}/sumups#${datatypeId}`;

/** The gear's totals, one per datatype of EQUIPMENT_SUMUP_DATATYPES. */
export function equipmentSumups(e: EquipmentRow): EquipmentSumup[] {
  const values = {
    5: e.distance,
    24: e.duration,
    30: e.moving_time,
    18: e.elevation_gain,
    98: String(e.activities),
  };
  return EQUIPMENT_SUMUP_DATATYPES.map((datatypeId) => ({
    equipmentId: e.id,
    datatypeId,
    value: Number(values[datatypeId]),
    updatedAt: e.updated_at,
  }));
}

/** The members of a UserEquipment node, as /v2/user_equipments answers them (and its web hook event, and the personal-data export). */
export const equipmentFields = (e: EquipmentRow) => ({
  id: e.id,
  user: iri('users', e.user_id),
  category: e.category,
  brand: e.brand,
  name: e.name,
  sumups: EQUIPMENT_SUMUP_DATATYPES.map((d) => equipmentSumupIri(e.id, d)),
  sportsAutoAssigned: e.sports_auto_assigned.map((s) => iri('sports', s)),
  startDate: e.start_date && formatDateTime(e.start_date),
  createdAt: formatDateTime(e.created_at),
  updatedAt: formatDateTime(e.updated_at),
  // Extensions, after v2.26's members.
  retired: e.retired,
  alertDistance: e.alert_distance === null ? null : Number(e.alert_distance),
  alertedAt: e.alerted_at && formatDateTime(e.alerted_at),
  totals: {
    distance: Number(e.distance),
    duration: Number(e.duration),
    movingTime: Number(e.moving_time),
    elevationGain: Number(e.elevation_gain),
    activities: e.activities,
  },
});
