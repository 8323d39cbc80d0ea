import type { Generated } from 'kysely';

/** A public share of an activity (migration 0042). */
export interface ShareActivitiesTable {
  /** The public token: the share's id and the secret of its page (base64url, 256 random bits). */
  token: string;
  user_id: string;
  activity_id: string;
  created_at: Generated<Date>;
}

/** A user sharing their activities with another (migration 0071): `user_id` shares with `friend_id`. */
export interface ShareUsersTable {
  id: Generated<string>;
  user_id: string;
  friend_id: string;
  status: Generated<'pending' | 'accepted' | 'refused'>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface ShareTables {
  share_activities: ShareActivitiesTable;
  share_users: ShareUsersTable;
}
