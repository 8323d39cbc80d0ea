import type { DeletionStep } from '../kernel/registration.ts';

/** Partners are community content: an account's deletion keeps them, without their creator. */
export const partnersStep: DeletionStep = {
  name: 'partners',
  run: ({ batches, target }) =>
    batches('partners_anonymised', async (trx, limit) => {
      const rows = await trx
        .updateTable('partners')
        .set({ created_by: null })
        .where(
          'id',
          'in',
          trx.selectFrom('partners').select('id').where('created_by', '=', target.accountId).limit(limit),
        )
        .returning('id')
        .execute();
      return { count: rows.length };
    }),
};
