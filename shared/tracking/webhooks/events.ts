import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema/index.ts';
import type { ActivityRow } from '../../db/schema/tracking.ts';
import { type Json, job } from '../../queue/jobs.ts';
import { outboxInsert } from '../../queue/outbox-write.ts';
import { activityFields } from '../activities/fields.ts';
import { iri, TRACKING_PREFIX } from '../iri.ts';

/**
 * The events a hook subscribes to (docs/webhooks.md, "Events") and how a write emits one: in its
 * own transaction, so the event exists exactly when the change does. Nothing is written when no
 * enabled hook of the user listens to that type.
 */

/** The events v2.26 names. */
export const V226_EVENTS = ['activity_create', 'activity_delete'] as const;

/** Every event, v2.26's and this server's extensions. */
export const WEBHOOK_EVENTS = [
  'activity_create',
  'activity_update',
  'activity_delete',
  'records_update',
  'thumbnail_ready',
  'export_ready',
  'equipment_alert',
  'challenge_achieved',
  'import_done',
  'import_failed',
  'share_request',
  'share_user_create',
  'share_user_delete',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

export interface TrackingEvent {
  type: WebhookEventType;
  /** Whose data changed: only their hooks hear of it. */
  userId: string;
  /** The IRI whose events reach a hook in the order they happened (defaults to `resource`). */
  subject?: string;
  /** The IRI of the resource. */
  resource: string;
  /** The resource as the API serves it now (for a deletion, as it was last). */
  data: { [key: string]: Json };
}

/**
 * Records an event in the caller's transaction, with the outbox row of its fan-out job, in one
 * statement; true when a hook listens (the event was written).
 */
export async function emitTrackingEvent(trx: Kysely<Database>, event: TrackingEvent): Promise<boolean> {
  const id = `evt_${randomUUID().replaceAll('-', '')}`;
  const fanOut = outboxInsert([job('webhooks', 'event', { eventId: id })], 'e');
  const result = await sql`
    with e as (
      insert into webhook_events (id, user_id, type, subject, resource, data)
      select ${id}, ${event.userId}, ${event.type}, ${event.subject ?? event.resource}, ${event.resource},
        ${JSON.stringify(event.data)}::jsonb
      where exists (select from user_web_hooks h
        where h.user_id = ${event.userId} and ${event.type} = any(h.events) and h.disabled_at is null)
      returning id
    )
    ${fanOut}`.execute(trx);
  return Number(result.numAffectedRows ?? 0) > 0;
}

/** Whether an enabled hook of the user listens to `type` (to skip building an event nobody hears). */
export async function hasListeners(db: Kysely<Database>, userId: string, type: WebhookEventType): Promise<boolean> {
  const found = await db
    .selectFrom('user_web_hooks')
    .select('id')
    .where('user_id', '=', userId)
    .where(sql<boolean>`${type} = any(events)`)
    .where('disabled_at', 'is', null)
    .limit(1)
    .executeTakeFirst();
  return found !== undefined;
}

/** An activity as POST, PUT and the list answer it in JSON-LD (without its streams). */
export function activityNode(row: ActivityRow): { [key: string]: Json } {
  return {
    '@context': `${TRACKING_PREFIX}/contexts/Activity`,
    '@id': iri('activities', row.id),
    '@type': 'Activity',
    ...(activityFields(row) as { [key: string]: Json }),
  };
}

/** Emits an event about an activity, with the activity as it is in `row`. */
export function emitActivityEvent(
  trx: Kysely<Database>,
  type: 'activity_create' | 'activity_update' | 'activity_delete' | 'thumbnail_ready',
  row: ActivityRow,
): Promise<boolean> {
  return emitTrackingEvent(trx, {
    type,
    userId: row.user_id,
    resource: iri('activities', row.id),
    data: activityNode(row),
  });
}
