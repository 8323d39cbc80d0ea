import { sql } from 'kysely';
import { liveApiKeys } from '../../accounts/api-keys.ts';
import { placeholder, preparedStatement } from '../../accounts/prepared.ts';
import {
  type TokenRef,
  type TokenState,
  tokenStateOf,
  tokenStateQuery,
  tokenStateValues,
} from '../../accounts/token-accounts.ts';
import type { Db } from '../../db/database.ts';
import type { TrackingUser } from './store.ts';

/**
 * Every tracking call sends an API key and a token, and acts as the token's tracking user: the
 * key (api-keys.ts), the token's account with its client, consent and revocations
 * (token-accounts.ts) and the user are read in one statement, prepared once per connection.
 * Nothing of it is cached: a key, a grant or an account refused now is refused by the next call
 * on every API process.
 */
const credentialsStatement = preparedStatement('tracking-credentials', (db) =>
  tokenStateQuery(db)
    .leftJoin(liveApiKeys(db, placeholder<string>(5)).as('k'), (j) => j.onTrue())
    .leftJoin('tracking_users as u', 'u.id', 'a.ldid')
    .select([
      'k.id as key_id',
      'k.client_id as key_client_id',
      'k.last_used_at as key_last_used_at',
      // The tracking user's columns as findTrackingUser reads them (store.ts), prefixed.
      'u.id as user_id',
      'u.account_id as user_account_id',
      'u.one_id as user_one_id',
      'u.gender as user_gender',
      'u.roles as user_roles',
      'u.language as user_language',
      'u.country as user_country',
      'u.image_url as user_image_url',
      sql<string | null>`to_char(u.birth_date, 'YYYY-MM-DD')`.as('user_birth_date'),
      'u.schedule_delete as user_schedule_delete',
      'u.timezone as user_timezone',
      'u.default_visibility as user_default_visibility',
      'u.default_map_visibility as user_default_map_visibility',
      'u.default_map_hidden_ends as user_default_map_hidden_ends',
      'u.created_at as user_created_at',
      'u.updated_at as user_updated_at',
    ]),
);

export interface TrackingCredentials {
  /** The live API key of the value sent, if any. */
  key: { id: string; clientId: string; last_used_at: Date | null } | undefined;
  state: TokenState;
  /** The account's tracking user; null before their first call creates it. */
  user: TrackingUser | null;
}

/**
 * The key, the token's state and the tracking user of a call, in one statement; undefined when
 * the token names no account of ours (whether the key is live is then not read).
 */
export async function findTrackingCredentials(
  db: Db,
  request: { keyHash: string; token: TokenRef },
): Promise<TrackingCredentials | undefined> {
  const values = tokenStateValues(request.token);
  if (!values) return undefined;
  const [row] = await credentialsStatement(db, [...values, request.keyHash]);
  if (!row) return undefined;
  return {
    key:
      row.key_id && row.key_client_id
        ? { id: row.key_id, clientId: row.key_client_id, last_used_at: row.key_last_used_at }
        : undefined,
    state: tokenStateOf(row),
    user:
      row.user_id && row.user_account_id && row.user_roles && row.user_created_at && row.user_updated_at
        ? {
            id: row.user_id,
            account_id: row.user_account_id,
            one_id: row.user_one_id,
            gender: row.user_gender,
            roles: row.user_roles,
            language: row.user_language,
            country: row.user_country,
            image_url: row.user_image_url,
            birth_date: row.user_birth_date,
            schedule_delete: row.user_schedule_delete,
            timezone: row.user_timezone,
            default_visibility: row.user_default_visibility ?? 'private',
            default_map_visibility: row.user_default_map_visibility ?? 'private',
            default_map_hidden_ends: row.user_default_map_hidden_ends ?? 0,
            created_at: row.user_created_at,
            updated_at: row.user_updated_at,
          }
        : null,
  };
}
