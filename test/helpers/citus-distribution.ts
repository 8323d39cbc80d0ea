import type { Database } from '../../shared/db/schema/index.ts';

/**
 * Where each table lives on a Citus cluster (docs/scale-out.md, "The path to Citus"):
 * - `distributed`: hash-distributed by `column`, every such table co-located with the others (one
 *   colocation group: the shards of one user id sit on one worker), so a statement whose every
 *   distributed table is pinned to one user id runs on one shard. `added`: the table has no such
 *   column yet; the move to Citus adds it (a copy of the parent row's, as activity_best_efforts
 *   already keeps), and the statements on the table then filter on it.
 * - `reference`: copied to every node; joins with distributed tables stay on the shard's node.
 * - `local`: stays on the coordinator only (a statement joining it with a distributed table is
 *   not a one-shard statement).
 * A Record over the schema's tables: a new table does not type-check until it is placed here.
 */
export type Placement =
  | { kind: 'distributed'; column: string; added?: true }
  | { kind: 'reference' }
  | { kind: 'local'; why: string };

const byUser: Placement = { kind: 'distributed', column: 'user_id' };
const byUserAdded: Placement = { kind: 'distributed', column: 'user_id', added: true };
const reference: Placement = { kind: 'reference' };
const accounts: Placement = {
  kind: 'local',
  why: 'accounts and login: looked up by token, client, key or e-mail, never by a tracking user id',
};

export const DISTRIBUTION: Record<keyof Database, Placement> = {
  // Tracking: every row belongs to one user (the ldid).
  tracking_users: { kind: 'distributed', column: 'id' },
  user_devices: byUser,
  activities: byUser,
  activity_tracks: byUserAdded,
  activity_datastreams: byUserAdded,
  activity_stream_channels: byUserAdded,
  activity_stream_previews: byUserAdded,
  activity_best_efforts: byUser,
  activity_records_state: byUserAdded,
  activity_sumup_state: byUser,
  activity_progress_state: byUser,
  user_equipments: byUser,
  user_measure_goals: byUser,
  user_challenges: byUser,
  activity_tombstones: byUser,
  user_measures: byUser,
  user_records: byUser,
  user_sumups: byUser,
  tracking_uploads: byUser,
  tracking_exports: byUser,
  // A job, its children and its owner's data share a shard (parent_id is the same user's).
  jobs: byUser,
  share_activities: byUser,
  // By the user who shares: their given shares on one shard; what a user received (the friends
  // list, the feed's owners) reads every shard (docs/scale-out.md).
  share_users: byUser,
  user_web_hooks: byUser,
  webhook_events: byUser,
  webhook_deliveries: byUserAdded,
  webhook_attempts: byUserAdded,
  // Referentials, places, catalogue and partners: read-mostly, written by staff or jobs.
  universes: reference,
  sports: reference,
  sport_groups: reference,
  sport_group_members: reference,
  sport_search_names: reference,
  datatypes: reference,
  connectors: reference,
  device_models: reference,
  firmwares: reference,
  place_tags: reference,
  place_filters: reference,
  sport_place_tags: reference,
  sport_place_filters: reference,
  places: reference,
  place_notes: reference,
  place_activities: reference,
  place_edits: reference,
  geo_cities: reference,
  partners: reference,
  partner_sports: reference,
  sport_copractice: reference,
  city_sport_popularity: reference,
  country_sport_density: reference,
  sport_popularity: reference,
  recommendations_runs: reference,
  // The coordinator's own.
  accounts,
  signing_keys: accounts,
  oauth_clients: accounts,
  api_keys: accounts,
  oidc_payloads: accounts,
  oauth_consents: accounts,
  revoked_tokens: accounts,
  revoked_grants: accounts,
  account_sessions: accounts,
  outbox: {
    kind: 'local',
    why: 'the relays claim rows with FOR UPDATE SKIP LOCKED across all users, which Citus runs on one node only',
  },
  outbox_epoch: { kind: 'local', why: "one row: the outbox's epoch, read and locked with the outbox" },
  idempotency_keys: {
    kind: 'local',
    why: 'keyed by caller scope (account or client), also for callers without a tracking user',
  },
  account_deletions: { kind: 'local', why: 'one row per account being deleted, read by the purge run' },
  account_deletion_files: { kind: 'local', why: 'files a deletion still has to remove, read by the purge run' },
};

/** Tables of the database that are no table of the application (PostGIS's, the migrator's). */
export const NOT_APPLICATION_TABLES = new Set(['spatial_ref_sys', 'kysely_migration', 'kysely_migration_lock']);
