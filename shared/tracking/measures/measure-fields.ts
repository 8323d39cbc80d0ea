import { formatDateTime } from '../dates.ts';
import { iri } from '../iri.ts';
import type { Measure } from './store.ts';

/** The members of a UserMeasure node, as /v2/user_measures answers them (and the personal-data export). */
export const measureFields = (m: Measure) => ({
  id: m.id,
  user: iri('users', m.user_id),
  datatype: iri('datatypes', m.datatype_id),
  value: m.value,
  date: formatDateTime(m.date),
  createdAt: formatDateTime(m.created_at),
  updatedAt: formatDateTime(m.updated_at),
});
