import type { DeletionStep } from '../kernel/registration.ts';

/**
 * The places service's step of an account's deletion (docs/accounts-lifecycle.md): the places
 * the user created that are not approved go with their pictures; approved ones and place
 * activities are community content and stay without their creator.
 */

/** The storage folder of a place's pictures (images.ts). */
const placeFolder = (uuid: string) => `places/${uuid.toLowerCase()}`;

export const placesStep: DeletionStep = {
  name: 'places',
  run: async ({ batches, target }) => {
    const account = target.accountId;
    await batches('places', async (trx, limit) => {
      // Not approved: nobody but the user and staff sees it; its activities and pictures go with it.
      const rows = await trx
        .deleteFrom('places')
        .where(
          'id',
          'in',
          trx
            .selectFrom('places')
            .select('id')
            .where('created_by', '=', account)
            .where('status', '<>', 'approved')
            .limit(limit),
        )
        .returning('uuid')
        .execute();
      return { count: rows.length, files: rows.map((r) => placeFolder(r.uuid)) };
    });
    await batches('place_edits', async (trx, limit) => {
      const rows = await trx
        .deleteFrom('place_edits')
        .where('created_by', '=', account)
        .where(
          'place_id',
          'in',
          trx.selectFrom('place_edits').select('place_id').where('created_by', '=', account).limit(limit),
        )
        .returning('place_id')
        .execute();
      return { count: rows.length };
    });
    // Approved places and place activities stay, without their creator (not an edit: updated_at stays).
    await batches('places_anonymised', async (trx, limit) => {
      const rows = await trx
        .updateTable('places')
        .set({ created_by: null })
        .where('id', 'in', trx.selectFrom('places').select('id').where('created_by', '=', account).limit(limit))
        .returning('id')
        .execute();
      return { count: rows.length };
    });
    await batches('place_activities_anonymised', async (trx, limit) => {
      const rows = await trx
        .updateTable('place_activities')
        .set({ created_by: null })
        .where(
          'id',
          'in',
          trx.selectFrom('place_activities').select('id').where('created_by', '=', account).limit(limit),
        )
        .returning('id')
        .execute();
      return { count: rows.length };
    });
  },
  // A place submitted by a request that passed before the account was disabled.
  remains: async (trx, target) =>
    (await trx
      .selectFrom('places')
      .select('id')
      .where('created_by', '=', target.accountId)
      .where('status', '<>', 'approved')
      .executeTakeFirst()) !== undefined,
};
