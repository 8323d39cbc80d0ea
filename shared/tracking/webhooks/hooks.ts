import { type ExpressionBuilder, type Kysely, type Selectable, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { type Found, type PageRequest, pageOf } from '../../db/paging.ts';
import type { Database } from '../../db/schema/index.ts';
import type { UserWebHooksTable } from '../../db/schema/webhooks.ts';
import { conflictError, type FieldError, invalid, notFoundError } from '../../errors.ts';
import { iri } from '../iri.ts';
import { V226_EVENTS, WEBHOOK_EVENTS, type WebhookEventType } from './events.ts';
import { newWebhookSecret } from './signature.ts';
import { type TargetRules, urlProblem } from './target.ts';

/**
 * A user's webhooks (`/v2/user_web_hooks`, docs/webhooks.md). A hook belongs to its user and to
 * the application (OAuth client) that made it: an application sees and changes only its own
 * hooks of its user; another user's or another application's hook is "not found". A hook made
 * before hooks belonged to an application (migration 0065) is any of its user's applications'
 * until one changes it, which makes it its own. The secret is shown once, when it is made
 * (creation, rotation).
 */

export type UserWebHookRow = Selectable<UserWebHooksTable>;

/** Hooks one user may hold. */
export const MAX_WEB_HOOKS_PER_USER = 20;
/** After a rotation the previous secret signs too for this long, so receivers can switch without a gap. */
export const PREVIOUS_SECRET_HOURS = 24;

/** Who calls: the tracking user and the application (OAuth client) acting for them. */
export interface WebHookOwner {
  id: string;
  clientId: string;
}

/** A hook as a client writes it (the user already taken from its IRI); absent members keep their value. */
export interface WebHookInput {
  userId?: string | undefined;
  url?: string | undefined;
  events?: string[] | undefined;
}

const notFound = (id: string) => notFoundError(`No user web hook ${id}`);

/** The hooks the caller may see: its user's, made by its application or by none (before 0065). */
const ownedBy = (owner: WebHookOwner) => (eb: ExpressionBuilder<Database, 'user_web_hooks'>) =>
  eb.and([eb('user_id', '=', owner.id), eb.or([eb('client_id', '=', owner.clientId), eb('client_id', 'is', null)])]);

/** The broken rules of a write, each naming its body field. */
export function webHookProblems(owner: WebHookOwner, input: WebHookInput, rules: TargetRules): FieldError[] {
  const errors: FieldError[] = [];
  if (input.userId !== undefined && input.userId !== owner.id)
    errors.push({ path: 'body.user', message: `must be your own user, ${iri('users', owner.id)}` });
  if (input.url !== undefined) {
    const problem = urlProblem(input.url, rules);
    if (problem) errors.push({ path: 'body.url', message: problem });
  }
  if (input.events !== undefined) {
    if (input.events.length === 0) errors.push({ path: 'body.events', message: 'must name at least one event' });
    input.events.forEach((event, i) => {
      if (!(WEBHOOK_EVENTS as readonly string[]).includes(event))
        errors.push({
          path: `body.events[${i}]`,
          message: `"${event}" is no event (events: ${WEBHOOK_EVENTS.join(', ')})`,
        });
    });
  }
  return errors;
}

/** The events in the canonical order, each once. */
const eventsOf = (events: readonly string[]) => WEBHOOK_EVENTS.filter((e) => events.includes(e)) as WebhookEventType[];

/** Creates a hook of the caller; its secret is in the row, to be shown this once. */
export async function createWebHook(
  db: Db,
  owner: WebHookOwner,
  input: WebHookInput & { url: string },
  rules: TargetRules,
): Promise<UserWebHookRow> {
  const problems = webHookProblems(owner, input, rules);
  if (problems.length) throw invalid(problems);
  return db.transaction().execute(async (trx) => {
    // Serializes a user's creations, so two at once cannot both pass the count.
    await sql`select pg_advisory_xact_lock(hashtext('user_web_hooks'), hashtext(${owner.id}))`.execute(trx);
    const held = await trx
      .selectFrom('user_web_hooks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('user_id', '=', owner.id)
      .executeTakeFirstOrThrow();
    if (Number(held.n) >= MAX_WEB_HOOKS_PER_USER)
      throw conflictError(
        `Your account holds ${MAX_WEB_HOOKS_PER_USER} web hooks (its applications' together), the most allowed: delete one first`,
      );
    return trx
      .insertInto('user_web_hooks')
      .values({
        user_id: owner.id,
        client_id: owner.clientId,
        url: input.url,
        events: eventsOf(input.events ?? V226_EVENTS),
        secret: newWebhookSecret(),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  });
}

/** One hook of the caller; another user's, or none, is "not found". */
export async function findWebHook(db: Kysely<Database>, owner: WebHookOwner, id: string): Promise<UserWebHookRow> {
  const row = await db
    .selectFrom('user_web_hooks')
    .selectAll()
    .where('id', '=', id)
    .where(ownedBy(owner))
    .executeTakeFirst();
  if (!row) throw notFound(id);
  return row;
}

/** The caller's hooks, oldest first; a `user` filter naming only other users finds none. */
export function listWebHooks(
  db: Db,
  owner: WebHookOwner,
  filter: { userIds?: string[] | undefined },
  paging: PageRequest,
): Promise<Found<UserWebHookRow>> {
  let q = db.selectFrom('user_web_hooks').selectAll().where(ownedBy(owner));
  if (filter.userIds && !filter.userIds.includes(owner.id)) q = q.where(sql<boolean>`false`);
  return pageOf(q.orderBy('created_at').orderBy('id'), paging);
}

/**
 * Applies a PUT: the fields sent replace their values, the others stay. A write also enables the
 * hook again and clears its failures: its owner has looked at it (docs/webhooks.md).
 */
export async function updateWebHook(
  db: Db,
  owner: WebHookOwner,
  id: string,
  input: WebHookInput,
  rules: TargetRules,
): Promise<UserWebHookRow> {
  const problems = webHookProblems(owner, input, rules);
  if (problems.length) throw invalid(problems);
  const row = await db
    .updateTable('user_web_hooks')
    .set({
      ...(input.url !== undefined ? { url: input.url } : {}),
      ...(input.events !== undefined ? { events: eventsOf(input.events) } : {}),
      consecutive_failures: 0,
      start_failure_date: null,
      retry_at: null,
      probe_until: null,
      disabled_at: null,
      disabled_reason: null,
      // A hook made before hooks belonged to an application becomes the caller's.
      client_id: owner.clientId,
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where(ownedBy(owner))
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound(id);
  return row;
}

/** Deletes a hook of the caller; its pending deliveries go with it. */
export async function deleteWebHook(db: Db, owner: WebHookOwner, id: string): Promise<void> {
  const deleted = await db.deleteFrom('user_web_hooks').where('id', '=', id).where(ownedBy(owner)).executeTakeFirst();
  if (deleted.numDeletedRows === 0n) throw notFound(id);
}

/**
 * Gives a hook of the caller a new secret (in the row, to be shown this once); the previous one
 * signs deliveries too for PREVIOUS_SECRET_HOURS.
 */
export async function rotateWebHookSecret(db: Db, owner: WebHookOwner, id: string): Promise<UserWebHookRow> {
  const row = await db
    .updateTable('user_web_hooks')
    .set({
      previous_secret: sql<string>`secret`,
      previous_secret_until: sql<Date>`now() + make_interval(hours => ${PREVIOUS_SECRET_HOURS})`,
      secret: newWebhookSecret(),
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where(ownedBy(owner))
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound(id);
  return row;
}

/**
 * Deletes every hook of a user, their events and pending deliveries with them (for the deletion
 * of an account; deleting the tracking user cascades to the same rows). Returns how many hooks.
 */
export async function deleteUserWebHooks(db: Kysely<Database>, userId: string): Promise<number> {
  await db.deleteFrom('webhook_events').where('user_id', '=', userId).execute();
  const deleted = await db.deleteFrom('user_web_hooks').where('user_id', '=', userId).executeTakeFirst();
  return Number(deleted.numDeletedRows);
}
