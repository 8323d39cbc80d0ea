import type { Generated, GeneratedAlways } from 'kysely';

/** A user's webhook (migration 0059, docs/webhooks.md). */
export interface UserWebHooksTable {
  /** 32 hex digits. */
  id: Generated<string>;
  user_id: string;
  /** The application (OAuth client) that made it; null: made before migration 0065, disabled until one adopts it. */
  client_id: string | null;
  url: string;
  events: string[];
  /** `whsec_` + base64 of 32 random bytes: signs every delivery. */
  secret: string;
  /** The secret before the last rotation: deliveries carry its signature too until `previous_secret_until`. */
  previous_secret: string | null;
  previous_secret_until: Date | null;
  consecutive_failures: Generated<number>;
  start_failure_date: Date | null;
  /** While failing: no attempt before this (the hook's backoff). */
  retry_at: Date | null;
  /** While failing: the one delivery trying the hook again holds it until then. */
  probe_until: Date | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

/** Something that happened to a user's data, kept while its deliveries run. */
export interface WebhookEventsTable {
  /** `evt_` + 32 hex digits. */
  id: string;
  /** Orders the events of one subject. */
  seq: GeneratedAlways<number>;
  user_id: string;
  type: string;
  /** The IRI whose events reach a hook in order (the activity's, for its events). */
  subject: string;
  /** The resource's IRI. */
  resource: string;
  /** The resource as the API served it when the event happened. */
  data: unknown;
  fanned_out: Generated<boolean>;
  occurred_at: Generated<Date>;
}

/** `queued` until it ends: `delivered`, or `failed` (given up). */
export type DeliveryState = 'queued' | 'delivered' | 'failed';

/** One event for one hook; its id is the `webhook-id` the receiver sees. */
export interface WebhookDeliveriesTable {
  /** `msg_` + 32 hex digits. */
  id: string;
  hook_id: string;
  event_id: string;
  seq: number;
  subject: string;
  state: Generated<DeliveryState>;
  attempts: Generated<number>;
  next_attempt_at: Date | null;
  finished_at: Date | null;
}

/** One HTTP attempt of a delivery. */
export interface WebhookAttemptsTable {
  id: GeneratedAlways<number>;
  hook_id: string;
  event_id: string;
  event_type: string;
  attempted_at: Generated<Date>;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
}

export interface WebhookTables {
  user_web_hooks: UserWebHooksTable;
  webhook_events: WebhookEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
}
