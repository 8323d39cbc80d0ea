import type { Migration } from 'kysely/migration';
import * as m0001 from './0001_postgis.ts';
import * as m0002 from './0002_outbox.ts';
import * as m0003 from './0003_referentials.ts';
import * as m0004 from './0004_accounts.ts';
import * as m0010 from './0010_oauth.ts';
import * as m0020 from './0020_places.ts';
import * as m0022 from './0022_places_search.ts';
import * as m0030 from './0030_catalogue.ts';
import * as m0031 from './0031_recommendations.ts';
import * as m0032 from './0032_partners.ts';
import * as m0040 from './0040_tracking.ts';
import * as m0041 from './0041_tracking_devices.ts';
import * as m0042 from './0042_share_activities.ts';
import * as m0044 from './0044_activities.ts';
import * as m0045 from './0045_records.ts';
import * as m0046 from './0046_tracking_exports.ts';
import * as m0047 from './0047_activity_channels_bytea.ts';
import * as m0048 from './0048_activity_streams_lz4.ts';
import * as m0050 from './0050_accounts_consent.ts';
import * as m0051 from './0051_places_moderation.ts';
import * as m0052 from './0052_outbox_done.ts';
import * as m0053 from './0053_public_clients.ts';
import * as m0054 from './0054_outbox_request.ts';
import * as m0055 from './0055_idempotency_keys.ts';
import * as m0056 from './0056_revoked_grants.ts';
import * as m0057 from './0057_activity_duplicates.ts';
import * as m0058 from './0058_account_deletion.ts';
import * as m0059 from './0059_webhooks.ts';
import * as m0060 from './0060_activity_tombstones.ts';
import * as m0061 from './0061_user_sumups.ts';
import * as m0062 from './0062_activity_moving_time.ts';
import * as m0063 from './0063_similar_activities.ts';
import * as m0064 from './0064_city_keys.ts';
import * as m0065 from './0065_webhook_clients.ts';
import * as m0066 from './0066_account_sessions.ts';
import * as m0067 from './0067_restorable_functions.ts';
import * as m0068 from './0068_outbox_epoch.ts';
import * as m0069 from './0069_gear_goals_challenges.ts';
import * as m0070 from './0070_jobs.ts';
import * as m0071 from './0071_share_users.ts';

/**
 * Every migration, in order. Listed in code (not read from the folder) so the same list works
 * from the TypeScript sources and from the compiled build.
 */
export const migrations: Record<string, Migration> = {
  '0001_postgis': m0001,
  '0002_outbox': m0002,
  '0003_referentials': m0003,
  '0004_accounts': m0004,
  '0010_oauth': m0010,
  '0020_places': m0020,
  '0022_places_search': m0022,
  '0030_catalogue': m0030,
  '0031_recommendations': m0031,
  '0032_partners': m0032,
  '0040_tracking': m0040,
  '0041_tracking_devices': m0041,
  '0042_share_activities': m0042,
  '0044_activities': m0044,
  '0045_records': m0045,
  '0046_tracking_exports': m0046,
  '0047_activity_channels_bytea': m0047,
  '0048_activity_streams_lz4': m0048,
  '0050_accounts_consent': m0050,
  '0051_places_moderation': m0051,
  '0052_outbox_done': m0052,
  '0053_public_clients': m0053,
  '0054_outbox_request': m0054,
  '0055_idempotency_keys': m0055,
  '0056_revoked_grants': m0056,
  '0057_activity_duplicates': m0057,
  '0058_account_deletion': m0058,
  '0059_webhooks': m0059,
  '0060_activity_tombstones': m0060,
  '0061_user_sumups': m0061,
  '0062_activity_moving_time': m0062,
  '0063_similar_activities': m0063,
  '0064_city_keys': m0064,
  '0065_webhook_clients': m0065,
  '0066_account_sessions': m0066,
  '0067_restorable_functions': m0067,
  '0068_outbox_epoch': m0068,
  '0069_gear_goals_challenges': m0069,
  '0070_jobs': m0070,
  '0071_share_users': m0071,
};
