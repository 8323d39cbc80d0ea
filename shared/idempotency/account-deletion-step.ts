import type { DeletionStep } from '../kernel/registration.ts';

/** An account's idempotency keys go with it: their stored answers hold the user's data (key.ts names the scope). */
export const idempotencyKeysStep: DeletionStep = {
  name: 'idempotency-keys',
  run: ({ batches, target }) => {
    const scope = `account:${target.accountId}`;
    return batches('idempotency_keys', async (trx, limit) => {
      const rows = await trx
        .deleteFrom('idempotency_keys')
        .where('scope', '=', scope)
        .where('key', 'in', trx.selectFrom('idempotency_keys').select('key').where('scope', '=', scope).limit(limit))
        .returning('key')
        .execute();
      return { count: rows.length };
    });
  },
};
