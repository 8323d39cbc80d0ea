import { sql } from 'kysely';
import type { DeletionStep } from '../kernel/registration.ts';
import { setAccountDisabled } from './revocation.ts';

/** The accounts service's own steps of an account's deletion (docs/accounts-lifecycle.md). */

/**
 * First of all: the account is disabled and its sessions, grants and tokens ended (every token in
 * flight is refused from then on); the third-party clients it owns and their API keys revoked.
 */
export const revokeStep: DeletionStep = {
  name: 'revoke',
  run: async ({ db, transaction, target }) => {
    const account = target.accountId;
    // Disabling bumps the token version and deletes the sessions and grants (every token refused).
    await setAccountDisabled(db, account, true);
    await transaction(async (trx) => {
      const owned = trx
        .selectFrom('oauth_clients')
        .select('id')
        .where('owner_account_id', '=', account)
        .where('first_party', '=', false);
      await trx
        .updateTable('api_keys')
        .set({ revoked_at: sql<Date>`coalesce(revoked_at, now())` })
        .where('client_id', 'in', owned)
        .execute();
      await trx
        .updateTable('oauth_clients')
        .set({ revoked_at: sql<Date>`coalesce(revoked_at, now())` })
        .where('owner_account_id', '=', account)
        .where('first_party', '=', false)
        .execute();
      return {};
    });
  },
};

/**
 * Third-party apps the user registered go with their API keys and the consents given to them;
 * first-party clients (registered by staff or an operator) are the platform's: they stay.
 */
export const clientsStep: DeletionStep = {
  name: 'clients',
  run: async ({ batches, target }) => {
    const account = target.accountId;
    await batches('clients', async (trx, limit) => {
      const rows = await trx
        .deleteFrom('oauth_clients')
        .where(
          'id',
          'in',
          trx
            .selectFrom('oauth_clients')
            .select('id')
            .where('owner_account_id', '=', account)
            .where('first_party', '=', false)
            .limit(limit),
        )
        .returning('id')
        .execute();
      return { count: rows.length };
    });
    await batches('clients_kept', async (trx, limit) => {
      const rows = await trx
        .updateTable('oauth_clients')
        .set({ owner_account_id: null })
        .where(
          'id',
          'in',
          trx.selectFrom('oauth_clients').select('id').where('owner_account_id', '=', account).limit(limit),
        )
        .returning('id')
        .execute();
      return { count: rows.length };
    });
  },
};
