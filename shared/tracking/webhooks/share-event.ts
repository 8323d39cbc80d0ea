import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import type { ShareUsersTable } from '../../db/schema/shares.ts';
import { iri, TRACKING_PREFIX } from '../iri.ts';
import { shareUserFields } from '../sharing/share-fields.ts';
import { emitTrackingEvent, type WebhookEventType } from './events.ts';

/**
 * The events of a share between users (docs/webhooks.md): `share_request` to the friend asked,
 * `share_user_create` to both users once the friend accepts, `share_user_delete` to both when
 * either deletes it. The data is the ShareUser as GET /v2/share_users/{id} answers it.
 */
export async function emitShareEvent(
  trx: Kysely<Database>,
  type: Extract<WebhookEventType, 'share_request' | 'share_user_create' | 'share_user_delete'>,
  share: Selectable<ShareUsersTable>,
): Promise<void> {
  const resource = iri('share_users', share.id);
  const data = {
    '@context': `${TRACKING_PREFIX}/contexts/ShareUser`,
    '@id': resource,
    '@type': 'ShareUser',
    ...shareUserFields(share),
  };
  const users = type === 'share_request' ? [share.friend_id] : [share.user_id, share.friend_id];
  for (const userId of users) await emitTrackingEvent(trx, { type, userId, resource, data });
}
