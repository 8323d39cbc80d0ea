import { formatDateTime } from '../dates.ts';
import { iri } from '../iri.ts';
import type { UserRecord } from './records-read.ts';

/** The members of a UserRecord node (without `@context`, `@id`, `@type`), as /v2/user_records answers them. */
export function recordFields(r: UserRecord) {
  return {
    id: r.id,
    user: iri('users', r.user_id),
    datatype: iri('datatypes', r.datatype_id),
    activity: iri('activities', r.activity_id),
    sport: iri('sports', r.sport_id),
    type: r.type,
    value: r.value,
    createdAt: formatDateTime(r.created_at),
    updatedAt: formatDateTime(r.updated_at),
    date: formatDateTime(r.date),
  };
}
