import type { ColumnType, Generated, Selectable } from 'kysely';
import type { LocalizedNames } from './referentials.ts';

type Json<T> = ColumnType<T, string, string>;
type Stamps = { created_at: Generated<Date>; updated_at: Generated<Date> };

/** Who sees an activity or its map beside its owner (docs/tracking-sharing-users.md). */
export type Visibility = 'private' | 'followers' | 'public';

export interface TrackingUsersTable extends Stamps {
  /** The account's ldid. */
  id: string;
  account_id: string;
  one_id: string | null;
  gender: number | null;
  roles: Generated<string[]>;
  language: string | null;
  country: string | null;
  image_url: string | null;
  birth_date: ColumnType<string | null, string | null, string | null>;
  schedule_delete: Date | null;
  /** IANA time zone the statistics' periods are cut in; null: UTC (migration 0061). */
  timezone: ColumnType<string | null, string | null | undefined, string | null>;
  /** What a new activity of the user gets (migration 0071, docs/tracking-sharing-users.md). */
  default_visibility: Generated<Visibility>;
  default_map_visibility: Generated<Visibility>;
  default_map_hidden_ends: Generated<number>;
}

export interface ConnectorsTable extends Stamps {
  id: number;
  names: Json<LocalizedNames>;
  connector: string;
  version: string | null;
  active: Generated<boolean>;
}

export interface DeviceModelsTable extends Stamps {
  id: number;
  names: Json<LocalizedNames>;
  brand: string;
  serial_range: string | null;
  active: Generated<boolean>;
}

export interface FirmwaresTable extends Stamps {
  id: number;
  model_id: number;
  version: string;
  revision_date: Date | null;
  is_last_firmware: Generated<boolean>;
  active: Generated<boolean>;
}

export interface UserDevicesTable extends Stamps {
  id: Generated<string>;
  user_id: string;
  serial: string;
  model_id: number;
  firmware_id: number;
  ownership: Generated<number>;
  last_connected_at: Date | null;
}

/** Datatype id (as a string key) to its value for the whole activity. */
export type DataSummaries = Record<string, number>;

export interface ActivitiesTable extends Stamps {
  id: Generated<string>;
  user_id: string;
  sport_id: number;
  user_device_id: string | null;
  connector_id: number | null;
  name: string | null;
  startdate: Date;
  duration: number;
  comment: string | null;
  user_session: string | null;
  corrected_elevation: Generated<boolean>;
  images: ColumnType<string[], string[] | undefined, string[]>;
  thumbnail: string | null;
  tags: string[] | null;
  global_challenge: string | null;
  manual: boolean;
  /** The `location` object of the create body, as sent. */
  location: Json<Record<string, unknown> | null>;
  data_summaries: Json<DataSummaries>;
  available_datatypes: ColumnType<number[], number[] | undefined, number[]>;
  track_flag: Generated<boolean>;
  datastream_flag: Generated<boolean>;
  latitude: number | null;
  longitude: number | null;
  elevation: number | null;
  /** Bumped by every write, so a job can tell it works on the activity's latest state. */
  version: Generated<number>;
  /** SHA-256 of the file the activity was imported from; null for a JSON create (migration 0057). */
  file_sha256: Buffer | null;
  /** Created with `duplicates=keep`: never collides with another activity (migration 0057). */
  kept_duplicate: Generated<boolean>;
  /** Moving time (s), pauses and averages over it, computed at every write (migration 0062); null for rows written around the API. */
  moving_time: ColumnType<number | null, number | null | undefined, number | null>;
  pauses: ColumnType<{ start: number; duration: number }[] | null, string | null | undefined, string | null>;
  moving_speed_avg: ColumnType<number | null, number | null | undefined, number | null>;
  moving_pace: ColumnType<number | null, number | null | undefined, number | null>;
  /** Ids of the user's gear the activity was done with (migration 0069). */
  equipment_ids: ColumnType<string[], string[] | undefined, string[]>;
  /** Who sees the activity, and its map, beside its owner; metres of the track hidden at each end (migration 0071). */
  visibility: Generated<Visibility>;
  map_visibility: Generated<Visibility>;
  map_hidden_ends: Generated<number>;
}

/** An activity's row as read (every writer and reader of activities shares it). */
export type ActivityRow = Selectable<ActivitiesTable>;

export interface ActivityTracksTable {
  activity_id: string;
  points: number;
  /** geometry(GeometryZM, 4326): LineStringZM (a Point for one location); Z elevation (NaN unknown), M elapsed s. */
  track: ColumnType<unknown, unknown, unknown>;
}

export interface ActivityDatastreamsTable {
  activity_id: string;
  /** Elapsed seconds of the samples, ascending. */
  elapsed: number[];
}

export interface ActivityStreamChannelsTable {
  activity_id: string;
  datatype_id: number;
  /**
   * Aligned on activity_datastreams.elapsed: float64 little-endian, NaN where that sample has no
   * value of the datatype (migration 0047; `activity_channel_values(values)` gives a float8[] in SQL).
   */
  values: Buffer;
}

/** A long activity's channels at the positions of its preview (migration 0062); datatype 0 holds the elapsed seconds. */
export interface ActivityStreamPreviewsTable {
  activity_id: string;
  datatype_id: number;
  /** Samples of the activity's datastream. */
  samples: number;
  /** float64 little-endian, as activity_stream_channels.values. */
  values: Buffer;
}

export interface UserMeasuresTable extends Stamps {
  id: Generated<string>;
  user_id: string;
  datatype_id: number;
  value: number;
  date: Date;
}

export interface UserRecordsTable extends Stamps {
  id: Generated<string>;
  user_id: string;
  sport_id: number;
  /** `all` or `distance.<meters>m`. */
  type: string;
  datatype_id: number;
  activity_id: string;
  value: number;
  date: Date;
}

export interface TrackingUploadsTable {
  id: Generated<string>;
  user_id: string;
  path: string;
  content_type: string;
  bytes: number;
  created_at: Generated<Date>;
}

export interface TrackingTables {
  tracking_users: TrackingUsersTable;
  connectors: ConnectorsTable;
  device_models: DeviceModelsTable;
  firmwares: FirmwaresTable;
  user_devices: UserDevicesTable;
  activities: ActivitiesTable;
  activity_tracks: ActivityTracksTable;
  activity_datastreams: ActivityDatastreamsTable;
  activity_stream_channels: ActivityStreamChannelsTable;
  activity_stream_previews: ActivityStreamPreviewsTable;
  user_measures: UserMeasuresTable;
  user_records: UserRecordsTable;
  tracking_uploads: TrackingUploadsTable;
}
