import { type Kysely, sql } from 'kysely';
import { type Db, poolOf } from '../../db/database.ts';
import type { Database } from '../../db/schema/index.ts';
import type { DeliveryState } from '../../db/schema/webhooks.ts';
import type { MarkDone } from '../../queue/outbox.ts';
import { formatDateTime } from '../dates.ts';
import { deliveryBody } from './payload.ts';
import { hookRetryDelayMs, retryDelayMs } from './retry.ts';
import { type SendOptions, type SendResult, sendWebhook } from './send.ts';
import { webhookHeaders } from './signature.ts';
import type { TargetRules } from './target.ts';

/**
 * The `webhooks/deliver` job: one try of one delivery, and what follows it (docs/webhooks.md).
 * - Order: a delivery is sent only once every earlier delivery of its hook about the same
 *   subject (an activity) has ended; until then its job waits, delayed.
 * - Retries: a failing hook is tried again by one delivery at a time (its probe) once its backoff
 *   has passed; the others wait, delayed, without holding a worker. A failed delivery waits its
 *   own backoff too.
 * - Giving up: a hook failing for WEBHOOKS_DISABLE_AFTER_S is disabled and its open deliveries
 *   given up; a delivery whose event is that old when it fails again is given up alone.
 * The end of a delivery commits in one statement; its job's outbox row stays open until then.
 */

export interface DeliverySettings extends TargetRules {
  WEBHOOKS_TIMEOUT_MS: number;
  WEBHOOKS_RETRY_BASE_MS: number;
  WEBHOOKS_DISABLE_AFTER_S: number;
}

export type DeliveryOutcome =
  | { status: 'delivered'; statusCode: number | null }
  /** Nothing to do: the delivery ended already, or its hook or event was deleted. */
  | { status: 'skipped'; reason: string }
  | { status: 'given-up'; reason: string }
  /** Try again at `until` (the job is delayed until then). */
  | { status: 'wait'; until: Date; reason: string };

/** Attempts kept per hook (the owner reads them): older ones are dropped now and then. */
const ATTEMPTS_KEPT = 100;
/** How soon a delivery behind an earlier one of its subject looks again (that one is being sent). */
const BEHIND_MS = 100;

type Send = (url: string, headers: Record<string, string>, body: string, options: SendOptions) => Promise<SendResult>;

/** A delivery with what its try needs (the load statement's row). */
interface Delivery {
  id: string;
  hook_id: string;
  event_id: string;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: Date | null;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: Date | null;
  consecutive_failures: number;
  retry_at: Date | null;
  disabled_at: Date | null;
  type: string;
  resource: string;
  data: unknown;
  occurred_at: Date;
  /** Earlier deliveries of its hook and subject still open, and when the last of them is due. */
  behind: number;
  behind_until: Date | null;
}

/**
 * The hot statements of a delivery run as prepared statements straight through the pool (as the
 * searches do): planned once per connection, not at every delivery.
 */
const LOAD = {
  name: 'webhook-delivery-load',
  text: `select d.id, d.hook_id, d.event_id, d.state, d.attempts, d.next_attempt_at,
      h.url, h.secret, h.previous_secret, h.previous_secret_until, h.consecutive_failures, h.retry_at, h.disabled_at,
      e.type, e.resource, e.data, e.occurred_at, b.behind, b.behind_until
    from webhook_deliveries d
    join user_web_hooks h on h.id = d.hook_id
    join webhook_events e on e.id = d.event_id
    cross join lateral (
      select count(*)::int as behind, max(o.next_attempt_at) as behind_until from webhook_deliveries o
      where o.hook_id = d.hook_id and o.subject = d.subject and o.seq < d.seq and o.state = 'queued'
    ) b
    where d.id = $1`,
};
const DELIVERED = {
  name: 'webhook-delivery-delivered',
  text: `with attempt as (
      insert into webhook_attempts (hook_id, event_id, event_type, status_code, duration_ms, error)
      values ($2, $3, $4, $5, $6, null)
    ), hook as (
      update user_web_hooks
      set consecutive_failures = 0, start_failure_date = null, retry_at = null, probe_until = null
      where id = $2 and (consecutive_failures > 0 or start_failure_date is not null or probe_until is not null)
    )
    update webhook_deliveries set state = 'delivered', attempts = attempts + 1, finished_at = now()
    where id = $1 and state = 'queued'`,
};

async function loadDelivery(db: Db, deliveryId: string): Promise<Delivery | undefined> {
  return (await poolOf(db).query<Delivery>({ ...LOAD, values: [deliveryId] })).rows[0];
}

/** A short random spread, so deliveries parked on one hook do not all wake at the same instant. */
const spread = (at: number, ms = 500) => new Date(at + Math.round(Math.random() * ms));

/**
 * Whether this delivery may try the failing hook now: one at a time holds the hook's probe for
 * the length of an attempt. Undefined when it may, else when to look again.
 */
async function claimProbe(db: Db, d: Delivery, settings: DeliverySettings): Promise<Date | undefined> {
  const now = Date.now();
  const claimed = await db
    .updateTable('user_web_hooks')
    .set({ probe_until: new Date(now + settings.WEBHOOKS_TIMEOUT_MS + 1_000) })
    .where('id', '=', d.hook_id)
    .where((eb) => eb.or([eb('probe_until', 'is', null), eb('probe_until', '<=', new Date(now))]))
    .returning('id')
    .executeTakeFirst();
  if (claimed) return undefined;
  const hook = await db
    .selectFrom('user_web_hooks')
    .select(['consecutive_failures', 'probe_until'])
    .where('id', '=', d.hook_id)
    .executeTakeFirst();
  if (!hook || hook.consecutive_failures === 0) return undefined;
  return spread(Math.max(now, hook.probe_until?.getTime() ?? now) + 100);
}

/** The row of an attempt. */
function attemptValues(d: Delivery, result: SendResult) {
  return {
    hook_id: d.hook_id,
    event_id: d.event_id,
    event_type: d.type,
    status_code: result.statusCode,
    duration_ms: result.durationMs,
    error: result.error,
  };
}
/** Drops the hook's attempts older than its last ATTEMPTS_KEPT. */
async function pruneAttempts(db: Kysely<Database>, hookId: string): Promise<void> {
  await sql`
    delete from webhook_attempts where hook_id = ${hookId} and id <= (
      select id from webhook_attempts where hook_id = ${hookId} order by id desc offset ${ATTEMPTS_KEPT} limit 1)`.execute(
    db,
  );
}

/** A success, in one statement: the attempt, the delivery's end, the hook's failures cleared. */
async function recordSuccess(db: Db, d: Delivery, result: SendResult): Promise<void> {
  const values = [d.id, d.hook_id, d.event_id, d.type, result.statusCode, result.durationMs];
  await poolOf(db).query({ ...DELIVERED, values });
}

/** A failure: backoff, or giving up (see the top of this file), with the job's done mark when it ends. */
async function recordFailure(
  db: Db,
  d: Delivery,
  result: SendResult,
  started: Date,
  settings: DeliverySettings,
  markDone: MarkDone,
): Promise<DeliveryOutcome> {
  return db.transaction().execute(async (trx): Promise<DeliveryOutcome> => {
    await trx.insertInto('webhook_attempts').values(attemptValues(d, result)).execute();
    const now = Date.now();
    const hook = await trx
      .updateTable('user_web_hooks')
      .set({
        consecutive_failures: sql<number>`consecutive_failures + 1`,
        start_failure_date: sql<Date>`coalesce(start_failure_date, ${started}::timestamptz)`,
        probe_until: null,
      })
      .where('id', '=', d.hook_id)
      .returning(['consecutive_failures', 'start_failure_date'])
      .executeTakeFirst();
    if (!hook) return { status: 'skipped', reason: 'the hook was deleted' };
    const since = hook.start_failure_date ?? started;
    const failingForMs = now - since.getTime();
    const limitMs = settings.WEBHOOKS_DISABLE_AFTER_S * 1000;
    const attempts = d.attempts + 1;
    if (failingForMs >= limitMs) {
      const reason = `Disabled at ${formatDateTime(new Date(now))}: every delivery failed since ${formatDateTime(since)} (${hook.consecutive_failures} attempts in a row); the last: ${result.error}. Change the hook (PUT) to enable it again.`;
      await trx
        .updateTable('user_web_hooks')
        .set({ disabled_at: new Date(now), disabled_reason: reason.slice(0, 1000), retry_at: null })
        .where('id', '=', d.hook_id)
        .execute();
      await trx.updateTable('webhook_deliveries').set({ attempts }).where('id', '=', d.id).execute();
      // The other open deliveries' jobs find them ended and stop.
      await trx
        .updateTable('webhook_deliveries')
        .set({ state: 'failed', finished_at: sql<Date>`now()` })
        .where('hook_id', '=', d.hook_id)
        .where('state', '=', 'queued')
        .execute();
      await markDone(trx);
      return { status: 'given-up', reason: 'the hook is disabled' };
    }
    const retryAt = new Date(now + hookRetryDelayMs(failingForMs, settings.WEBHOOKS_RETRY_BASE_MS));
    await trx.updateTable('user_web_hooks').set({ retry_at: retryAt }).where('id', '=', d.hook_id).execute();
    if (now - d.occurred_at.getTime() >= limitMs) {
      await trx
        .updateTable('webhook_deliveries')
        .set({ attempts, state: 'failed', finished_at: sql<Date>`now()` })
        .where('id', '=', d.id)
        .execute();
      await markDone(trx);
      return { status: 'given-up', reason: `the event is older than ${settings.WEBHOOKS_DISABLE_AFTER_S} s` };
    }
    const next = new Date(now + retryDelayMs(attempts, settings.WEBHOOKS_RETRY_BASE_MS));
    await trx
      .updateTable('webhook_deliveries')
      .set({ attempts, next_attempt_at: next })
      .where('id', '=', d.id)
      .execute();
    return {
      status: 'wait',
      until: new Date(Math.max(next.getTime(), retryAt.getTime())),
      reason: result.error ?? 'failed',
    };
  });
}

/** Tries delivery `deliveryId` once, if it is its turn and it is due (see the top of this file). */
export async function deliverWebhook(
  db: Db,
  settings: DeliverySettings,
  deliveryId: string,
  markDone: MarkDone,
  send: Send = sendWebhook,
): Promise<DeliveryOutcome> {
  const d = await loadDelivery(db, deliveryId);
  if (!d) return { status: 'skipped', reason: 'the hook or the event was deleted' };
  if (d.state !== 'queued') return { status: 'skipped', reason: `delivery ${d.state}` };
  if (d.disabled_at) {
    await db
      .updateTable('webhook_deliveries')
      .set({ state: 'failed', finished_at: sql<Date>`now()` })
      .where('id', '=', d.id)
      .where('state', '=', 'queued')
      .execute();
    return { status: 'given-up', reason: 'the hook is disabled' };
  }
  const now = Date.now();
  const failing = d.consecutive_failures > 0;
  if (d.behind > 0) {
    // An earlier delivery of this subject is open: it goes first (being sent now, or due then).
    const until = Math.max(now + BEHIND_MS, d.behind_until?.getTime() ?? 0, failing ? (d.retry_at?.getTime() ?? 0) : 0);
    return { status: 'wait', until: spread(until, BEHIND_MS), reason: 'an earlier event of its subject goes first' };
  }
  const due = Math.max(d.next_attempt_at?.getTime() ?? 0, failing ? (d.retry_at?.getTime() ?? 0) : 0);
  if (due > now) return { status: 'wait', until: spread(due), reason: 'not due yet' };
  if (failing) {
    const later = await claimProbe(db, d, settings);
    if (later) return { status: 'wait', until: later, reason: 'another delivery is trying the failing hook' };
  }

  const body = deliveryBody({ ...d, id: d.event_id });
  const secrets = [
    d.secret,
    ...(d.previous_secret && d.previous_secret_until && d.previous_secret_until.getTime() > Date.now()
      ? [d.previous_secret]
      : []),
  ];
  const started = new Date();
  const result = await send(d.url, webhookHeaders(secrets, d.id, started, body), body, {
    rules: settings,
    timeoutMs: settings.WEBHOOKS_TIMEOUT_MS,
  });
  // About every tenth attempt: the hook keeps its last ATTEMPTS_KEPT and a few more meanwhile.
  if (Math.random() < 0.1) await pruneAttempts(db, d.hook_id);
  if (!result.ok) return recordFailure(db, d, result, started, settings, markDone);
  await recordSuccess(db, d, result);
  return { status: 'delivered', statusCode: result.statusCode };
}
