import { formatDateTime } from '../dates.ts';
import type { TrackingUser } from './store.ts';

/** The fields of a User node (without `@context`, `@id`, `@type`), in the spec's order, then our extensions. */
export function userFields(u: TrackingUser) {
  return {
    id: u.id,
    oneId: u.one_id,
    gender: u.gender,
    roles: u.roles,
    language: u.language,
    country: u.country,
    imageUrl: u.image_url,
    birthDate: u.birth_date,
    createdAt: formatDateTime(u.created_at),
    updatedAt: formatDateTime(u.updated_at),
    scheduleDelete: u.schedule_delete && formatDateTime(u.schedule_delete),
    timezone: u.timezone,
    defaultVisibility: u.default_visibility,
    defaultMapVisibility: u.default_map_visibility,
    defaultMapHiddenEnds: u.default_map_hidden_ends,
  };
}
