import type { ActivityRow } from '../../db/schema/tracking.ts';
import { formatDateTime } from '../dates.ts';
import { iri, iriOrNull } from '../iri.ts';

/** The fields of an Activity node (without `@context`, `@id`, `@type`), in the spec's order. */
export function activityFields(a: ActivityRow) {
  return {
    id: a.id,
    name: a.name,
    user: iri('users', a.user_id),
    sport: iri('sports', a.sport_id),
    userDevice: iriOrNull('user_devices', a.user_device_id),
    startdate: formatDateTime(a.startdate),
    duration: a.duration,
    latitude: a.latitude,
    longitude: a.longitude,
    elevation: a.elevation,
    manual: a.manual,
    comment: a.comment,
    connector: iriOrNull('connectors', a.connector_id),
    userSession: a.user_session,
    correctedElevation: a.corrected_elevation,
    images: a.images,
    thumbnail: a.thumbnail,
    dataSummaries: a.data_summaries,
    tags: a.tags,
    trackFlag: a.track_flag,
    datastreamFlag: a.datastream_flag,
    globalChallenge: a.global_challenge,
    availableDatatypes: a.available_datatypes,
    equipments: a.equipment_ids.map((id) => iri('user_equipments', id)),
    createdAt: formatDateTime(a.created_at),
    updatedAt: formatDateTime(a.updated_at),
    // Extensions (moving-time.ts): after the spec's fields.
    movingTime: a.moving_time,
    pauses: a.pauses,
    movingSpeedAvg: a.moving_speed_avg,
    movingPace: a.moving_pace,
    // Sharing between users (docs/tracking-sharing-users.md).
    visibility: a.visibility,
    mapVisibility: a.map_visibility,
    mapHiddenEnds: a.map_hidden_ends,
  };
}
