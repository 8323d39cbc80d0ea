import type { Selectable } from 'kysely';
import type { ShareUsersTable } from '../../db/schema/shares.ts';
import { formatDateTime } from '../dates.ts';
import { iri } from '../iri.ts';

/** The fields of a ShareUser node (v2.26's, then ours), as every read and event answers it. */
export function shareUserFields(s: Selectable<ShareUsersTable>) {
  return {
    id: s.id,
    user: iri('users', s.friend_id),
    createdAt: formatDateTime(s.created_at),
    updatedAt: formatDateTime(s.updated_at),
    owner: iri('users', s.user_id),
    status: s.status,
  };
}
