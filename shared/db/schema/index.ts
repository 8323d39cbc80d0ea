import type { AccountDeletionTables } from './account-deletions.ts';
import type { AccountTables } from './accounts.ts';
import type { CatalogueTables } from './catalogue.ts';
import type { CoreTables } from './core.ts';
import type { ExportTables } from './exports.ts';
import type { IdempotencyTables } from './idempotency.ts';
import type { JobTables } from './jobs.ts';
import type { PartnerTables } from './partners.ts';
import type { PlaceTables } from './places.ts';
import type { ProgressTables } from './progress.ts';
import type { RecommendationTables } from './recommendations.ts';
import type { RecordsTables } from './records.ts';
import type { ReferentialTables } from './referentials.ts';
import type { ShareTables } from './shares.ts';
import type { SumupTables } from './sumups.ts';
import type { TombstoneTables } from './tombstones.ts';
import type { TrackingTables } from './tracking.ts';
import type { WebhookTables } from './webhooks.ts';

/** The whole database as Kysely sees it: one interface per area, merged here. */
export interface Database
  extends CoreTables,
    ReferentialTables,
    AccountTables,
    PlaceTables,
    CatalogueTables,
    PartnerTables {}

/** The recommendations job's tables (declaration merging: one line per area, no shared line to edit). */
export interface Database extends RecommendationTables {}

/** The tracking data service's tables (migration 0040). */
export interface Database extends TrackingTables {}

/** Public activity shares (migration 0042) and shares between users (migration 0071). */
export interface Database extends ShareTables {}

/** The records job's best efforts per activity (migration 0045). */
export interface Database extends RecordsTables {}

/** Bulk exports of a user's activities (migration 0046). */
export interface Database extends ExportTables {}

/** The answers kept for Idempotency-Key retries (migration 0055). */
export interface Database extends IdempotencyTables {}

/** Accounts being deleted and the files their deletion still removes (migration 0058). */
export interface Database extends AccountDeletionTables {}

/** Webhooks: the hooks, their events, deliveries and attempts (migration 0059). */
export interface Database extends WebhookTables {}

/** Deleted activities, for the sync clients (migration 0060). */
export interface Database extends TombstoneTables {}

/** Statistics by period and what each activity added to them (migration 0061). */
export interface Database extends SumupTables {}

/** Gear, measure goals, challenges and what each activity added to them (migration 0069). */
export interface Database extends ProgressTables {}
/** Jobs users and staff watch at /v2/jobs: imports, bulk imports, batch recomputes (migration 0070). */
export interface Database extends JobTables {}
