import { type Kysely, sql } from 'kysely';
import { type Db, poolOf } from '../../db/database.ts';
import type { Database } from '../../db/schema/index.ts';
import type { DeliveryState } from '../../db/schema/webhooks.ts';
import { formatDateTime } from '../dates.ts';
import { Batcher } from './batcher.ts';
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
 * The job (added by the fan-out, fan-out.ts) completes only once the delivery's end committed.
 * The hot path, the load of a delivery and the record of its success, runs in batches: the
 * deliveries in flight in a process share one statement for each (batcher.ts).
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
  /** The account is disabled or the hook's application is: nothing is sent. */
  withdrawn: boolean;
}

/**
 * The hot statements of a delivery run as prepared statements straight through the pool (as the
 * searches do): planned once per connection, not at every delivery.
 */
const LOAD = {
  name: 'webhook-deliveries-load',
  text: `select d.id, d.hook_id, d.event_id, d.state, d.attempts, d.next_attempt_at,
      h.url, h.secret, h.previous_secret, h.previous_secret_until, h.consecutive_failures, h.retry_at, h.disabled_at,
      e.type, e.resource, e.data, e.occurred_at, b.behind, b.behind_until,
      a.disabled_at is not null or c.revoked_at is not null as withdrawn
    from webhook_deliveries d
    join user_web_hooks h on h.id = d.hook_id
    join tracking_users u on u.id = h.user_id
    join accounts a on a.id = u.account_id
    left join oauth_clients c on c.id = h.client_id
    join webhook_events e on e.id = d.event_id
    cross join lateral (
      select count(*)::int as behind, max(o.next_attempt_at) as behind_until from webhook_deliveries o
      where o.hook_id = d.hook_id and o.subject = d.subject and o.seq < d.seq and o.state = 'queued'
    ) b
    where d.id = any($1::text[])`,
};
/**
 * Successes: their attempts (a hook deleted meanwhile has none), their deliveries' end, their
 * hooks' failures cleared where there were any, and the attempts past the last ATTEMPTS_KEPT
 * dropped for the hooks in $7.
 */
const DELIVERED = {
  name: 'webhook-deliveries-delivered',
  text: `with v as (
      select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::int[])
        as v(id, hook_id, event_id, event_type, status_code, duration_ms)
    ), attempt as (
      insert into webhook_attempts (hook_id, event_id, event_type, status_code, duration_ms, error)
      select v.hook_id, v.event_id, v.event_type, v.status_code, v.duration_ms, null from v
      where exists (select from user_web_hooks h where h.id = v.hook_id)
    ), hook as (
      update user_web_hooks
      set consecutive_failures = 0, start_failure_date = null, retry_at = null, probe_until = null
      where id in (select hook_id from v)
        and (consecutive_failures > 0 or start_failure_date is not null or probe_until is not null)
    ), pruned as (
      delete from webhook_attempts a using (
        select p.hook_id, (select x.id from webhook_attempts x where x.hook_id = p.hook_id
          order by x.id desc offset ${ATTEMPTS_KEPT} limit 1) as last_id
        from unnest($7::text[]) as p(hook_id)
      ) p
      where a.hook_id = p.hook_id and a.id <= p.last_id
    )
    update webhook_deliveries d set state = 'delivered', attempts = d.attempts + 1, finished_at = now()
    from v where d.id = v.id and d.state = 'queued'`,
};

interface Success {
  d: Delivery;
  result: SendResult;
  /** Whether this success also drops its hook's oldest attempts (about one in ten does). */
  prune: boolean;
}

/** The batched statements of each database (one batch of each in flight at a time). */
const BATCHERS = new WeakMap<
  Db,
  { load: Batcher<string, Delivery | undefined>; delivered: Batcher<Success, undefined> }
>();

function batchersOf(db: Db) {
  let batchers = BATCHERS.get(db);
  if (!batchers) {
    const pool = poolOf(db);
    batchers = {
      load: new Batcher(async (ids) => {
        const { rows } = await pool.query<Delivery>({ ...LOAD, values: [ids] });
        const byId = new Map(rows.map((r) => [r.id, r]));
        return ids.map((id) => byId.get(id));
      }),
      delivered: new Batcher(async (successes) => {
        const column = <T>(pick: (s: Success) => T) => successes.map(pick);
        await pool.query({
          ...DELIVERED,
          values: [
            column((s) => s.d.id),
            column((s) => s.d.hook_id),
            column((s) => s.d.event_id),
            column((s) => s.d.type),
            column((s) => s.result.statusCode),
            column((s) => s.result.durationMs),
            [...new Set(successes.filter((s) => s.prune).map((s) => s.d.hook_id))],
          ],
        });
        return successes.map(() => undefined);
      }),
    };
    BATCHERS.set(db, batchers);
  }
  return batchers;
}

function loadDelivery(db: Db, deliveryId: string): Promise<Delivery | undefined> {
  return batchersOf(db).load.call(deliveryId);
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

/** A success, batched (DELIVERED): the attempt, the delivery's end, the hook's failures cleared. */
function recordSuccess(db: Db, d: Delivery, result: SendResult, prune: boolean): Promise<void> {
  return batchersOf(db).delivered.call({ d, result, prune });
}

/** A failure: backoff, or giving up (see the top of this file). */
async function recordFailure(
  db: Db,
  d: Delivery,
  result: SendResult,
  started: Date,
  settings: DeliverySettings,
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
  send: Send = sendWebhook,
): Promise<DeliveryOutcome> {
  const d = await loadDelivery(db, deliveryId);
  if (!d) return { status: 'skipped', reason: 'the hook or the event was deleted' };
  if (d.state !== 'queued') return { status: 'skipped', reason: `delivery ${d.state}` };
  if (d.disabled_at || d.withdrawn) {
    await db
      .updateTable('webhook_deliveries')
      .set({ state: 'failed', finished_at: sql<Date>`now()` })
      .where('id', '=', d.id)
      .where('state', '=', 'queued')
      .execute();
    return {
      status: 'given-up',
      reason: d.disabled_at ? 'the hook is disabled' : "the account or the hook's application is disabled",
    };
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
  const prune = Math.random() < 0.1;
  if (!result.ok) {
    if (prune) await pruneAttempts(db, d.hook_id);
    return recordFailure(db, d, result, started, settings);
  }
  await recordSuccess(db, d, result, prune);
  return { status: 'delivered', statusCode: result.statusCode };
}
