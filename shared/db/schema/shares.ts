import type { Generated } from 'kysely';

/** A public share of an activity (migration 0042). */
export interface ShareActivitiesTable {
  /** The public token: the share's id and the secret of its page (base64url, 256 random bits). */
  token: string;
  user_id: string;
  activity_id: string;
  created_at: Generated<Date>;
}

export interface ShareTables {
  share_activities: ShareActivitiesTable;
}
