import type { Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { WebhookAttemptsTable } from '../../db/schema/webhooks.ts';
import { findWebHook, type WebHookOwner } from './hooks.ts';

export type WebHookAttemptRow = Selectable<WebhookAttemptsTable>;

/** Attempts an owner reads per hook. */
export const ATTEMPTS_SHOWN = 100;

/** The last attempts of a hook of the caller, newest first (another user's hook is "not found"). */
export async function lastAttempts(db: Db, owner: WebHookOwner, hookId: string): Promise<WebHookAttemptRow[]> {
  await findWebHook(db, owner, hookId);
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('hook_id', '=', hookId)
    .orderBy('id', 'desc')
    .limit(ATTEMPTS_SHOWN)
    .execute();
}
