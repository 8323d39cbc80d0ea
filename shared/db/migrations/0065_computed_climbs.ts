import type { Kysely } from 'kysely';
import { refreshComputedClimbs } from '../../tracking/activities/climb-store.ts';

/**
 * The elevation gain and loss (dataSummaries 18 and 19) the service computed for the activities
 * stored before the climb rule became hysteresis on a lightly smoothed series
 * (docs/tracking-activities.md, "Elevation gain"), computed again from their elevation channel.
 * A device's or a client's own figures are kept (climb-store.ts tells them apart). Statistics
 * sum 18 and 19: `npm run records:recompute -- --all` rebuilds them (docs/operations.md).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await refreshComputedClimbs(db);
}

/** The old figures are not kept: going down leaves the new ones. */
export async function down(): Promise<void> {}
