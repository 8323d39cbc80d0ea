import { z } from 'zod';
import { formatDateTime } from '../../shared/tracking/dates.ts';
import { iri, TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import { ATTEMPTS_SHOWN, lastAttempts, type WebHookAttemptRow } from '../../shared/tracking/webhooks/attempts.ts';
import { V226_EVENTS, WEBHOOK_EVENTS } from '../../shared/tracking/webhooks/events.ts';
import {
  createWebHook,
  deleteWebHook,
  findWebHook,
  listWebHooks,
  MAX_WEB_HOOKS_PER_USER,
  PREVIOUS_SECRET_HOURS,
  rotateWebHookSecret,
  type UserWebHookRow,
  updateWebHook,
  type WebHookOwner,
} from '../../shared/tracking/webhooks/hooks.ts';
import type { AppContext } from '../context.ts';
import type { HydraView } from '../http/formats/format.ts';
import { contextIri, hydraSerializer } from '../http/formats/hydra.ts';
import type { ApiRouter } from '../http/route.ts';
import { dateTimeOut, iriOf, listFilterOf, listFilterShape, pagingShape, refOf, writeBody } from './schemas.ts';
import { trackingResource } from './tracking-resource.ts';

/**
 * /v2/user_web_hooks (docs/webhooks.md): the caller's webhooks, as v2.26 describes them, plus
 * the extensions: more events, the signing secret (shown when made), its rotation, the reason a
 * hook was disabled and its last attempts. Rules and deliveries live in shared/tracking/webhooks/.
 */

const PATH = '/user_web_hooks';

/**
 * The hook owner of a call: its user and its application, the API key's client (a tracking call
 * always carries one, bound to the token's client).
 */
function ownerOf(caller: { id: string }, ctx: { state: { apiKey?: { clientId: string } } }): WebHookOwner {
  const clientId = ctx.state.apiKey?.clientId;
  if (!clientId) throw new Error('a web hook call without an API key');
  return { id: caller.id, clientId };
}

/** A hook as reads answer it; `secret` only in the answers that make one. */
type ShownWebHook = UserWebHookRow & { shownSecret?: string };

const hookSchema = z
  .object({
    id: z.string(),
    user: z.string().meta({ format: 'iri-reference', example: '/v2/users/a1b2c3' }),
    url: z.string().meta({ format: 'uri', example: 'https://example.com/webhooks' }),
    events: z.array(z.enum(WEBHOOK_EVENTS)).meta({
      description: `v2.26's \`activity_create\` and \`activity_delete\`, and this server's extensions \`activity_update\`, \`records_update\`, \`thumbnail_ready\`, \`export_ready\`, \`equipment_alert\`, \`challenge_achieved\``,
    }),
    startFailureDate: dateTimeOut
      .nullable()
      .meta({ description: 'since when every delivery failed; null while deliveries succeed' }),
    consecutiveFailures: z.number().int().meta({ description: 'failed attempts since the last success' }),
    disabledAt: dateTimeOut.nullable().meta({
      description: 'extension: when the hook was disabled for failing too long (a PUT enables it again)',
    }),
    disabledReason: z.string().nullable().meta({ description: 'extension: why it was disabled, in words' }),
    secret: z.string().optional().meta({
      description:
        'extension: the signing secret (`whsec_` + base64), only in the answers of the creation and of `rotate_secret`: keep it then',
    }),
    createdAt: dateTimeOut,
    updatedAt: dateTimeOut,
  })
  .meta({ id: 'UserWebHook' });

const orNull = (d: Date | null) => (d === null ? null : formatDateTime(d));

const hookView: HydraView<ShownWebHook, typeof hookSchema> = {
  type: 'UserWebHook',
  path: `${TRACKING_PREFIX}${PATH}`,
  id: (h) => h.id,
  fields: (h) => ({
    id: h.id,
    user: iri('users', h.user_id),
    url: h.url,
    events: h.events as (typeof WEBHOOK_EVENTS)[number][],
    startFailureDate: orNull(h.start_failure_date),
    consecutiveFailures: h.consecutive_failures,
    disabledAt: orNull(h.disabled_at),
    disabledReason: h.disabled_reason,
    ...(h.shownSecret ? { secret: h.shownSecret } : {}),
    createdAt: formatDateTime(h.created_at),
    updatedAt: formatDateTime(h.updated_at),
  }),
};

const events = z
  .array(z.string().max(64))
  .max(WEBHOOK_EVENTS.length * 2)
  .meta({
    description: `any of ${WEBHOOK_EVENTS.join(', ')}`,
    example: ['activity_create', 'activity_delete'],
  });
const url = z.string().meta({ format: 'uri', example: 'https://example.com/webhooks' });
const user = iriOf('users').meta({ description: "the caller's own IRI" });
const READ_ONLY = [
  'id',
  'startFailureDate',
  'consecutiveFailures',
  'disabledAt',
  'disabledReason',
  'secret',
  'createdAt',
  'updatedAt',
];
const createBody = writeBody(
  'UserWebHook',
  { user, url, events: events.optional().meta({ description: `default: ${V226_EVENTS.join(', ')}` }) },
  READ_ONLY,
);
const updateBody = writeBody(
  'UserWebHook',
  { user: user.optional(), url: url.optional(), events: events.optional() },
  READ_ONLY,
);

const listQuery = z.object({ ...listFilterShape('user', refOf('users')), ...pagingShape });
const attemptSchema = z.object({
  attemptedAt: dateTimeOut,
  event: z.string().meta({ description: "the event id (the payload's `id`)" }),
  eventType: z.enum(WEBHOOK_EVENTS),
  statusCode: z.number().int().nullable().meta({ description: "the receiver's status; null when none came" }),
  durationMs: z.number().int(),
  error: z.string().nullable().meta({ description: 'why the attempt failed; null when it succeeded (2xx)' }),
});
const attemptsSchema = z.object({
  '@context': z.string(),
  '@id': z.string(),
  '@type': z.literal('hydra:Collection'),
  'hydra:member': z.array(attemptSchema),
  'hydra:totalItems': z.number().int(),
});

function attemptFields(a: WebHookAttemptRow) {
  return {
    attemptedAt: formatDateTime(a.attempted_at),
    event: a.event_id,
    eventType: a.event_type as (typeof WEBHOOK_EVENTS)[number],
    statusCode: a.status_code,
    durationMs: a.duration_ms,
    error: a.error,
  };
}

/** /v2/user_web_hooks: list, create, read, change, delete, rotate the secret, read the last attempts. */
export function webHooksResource(router: ApiRouter, app: AppContext): void {
  const { db, config } = app;
  const serializer = hydraSerializer(hookView);
  const request = (path: string) => ({ baseUrl: config.PUBLIC_URL, path, querystring: '', query: {} });
  trackingResource(router, app, {
    path: PATH,
    item: hookSchema,
    hydra: hookView,
    notFound: 'No such web hook (or not yours)',
    tag: 'tracking webhooks',
  })
    .list({
      summary: "The caller's web hooks",
      description:
        'Oldest first. `user` / `user[]` take IRIs or ids (only the caller has hooks here: another user finds none). Paging: `page`, `limit` (default 30, at most 100).',
      query: listQuery,
      handler: async ({ query, caller, principal, ctx }) => {
        const found = await app.reads.read(principal.accountId, ({ db }) =>
          listWebHooks(db, ownerOf(caller, ctx), { userIds: listFilterOf<string>(query, 'user') }, query),
        );
        return { ...found, page: query.page, limit: query.limit };
      },
    })
    .create({
      summary: 'Subscribe a URL to events of your data',
      description: `\`user\` must be the caller's IRI, \`url\` an https URL (http only where the server allows it) of a public address, \`events\` some of ${WEBHOOK_EVENTS.join(', ')} (default: ${V226_EVENTS.join(', ')}); otherwise 422 naming the field. The answer holds \`secret\`, the key the deliveries are signed with (Standard Webhooks), shown this once. At most ${MAX_WEB_HOOKS_PER_USER} hooks per user (409). See docs/webhooks.md.`,
      body: createBody,
      errors: { 409: `The caller holds ${MAX_WEB_HOOKS_PER_USER} web hooks already` },
      handler: async ({ body, caller, ctx }): Promise<ShownWebHook> => {
        const input = { userId: body.user, url: body.url, events: body.events };
        const row = await createWebHook(db, ownerOf(caller, ctx), input, config);
        return { ...row, shownSecret: row.secret };
      },
      location: (h) => `${TRACKING_PREFIX}${PATH}/${h.id}`,
    })
    .get({
      summary: 'One web hook of the caller (its secret is never shown again)',
      handler: async ({ params, caller, ctx }) => findWebHook(db, ownerOf(caller, ctx), params.id),
    })
    .update({
      summary: 'Change a web hook of the caller; this enables a disabled one again',
      description:
        'The fields sent replace their values, the others stay. Any change also clears the failures (`consecutiveFailures`, `startFailureDate`) and enables a disabled hook again. Read-only fields are ignored, unknown ones are a 422.',
      body: updateBody,
      handler: async ({ params, body, caller, ctx }) =>
        updateWebHook(
          db,
          ownerOf(caller, ctx),
          params.id,
          { userId: body.user, url: body.url, events: body.events },
          config,
        ),
    })
    .remove({
      summary: 'Delete a web hook of the caller (its pending deliveries are dropped)',
      handler: async ({ params, caller, ctx }) => deleteWebHook(db, ownerOf(caller, ctx), params.id),
    })
    .action({
      method: 'post',
      path: '/rotate_secret',
      summary: 'Give a web hook of the caller a new signing secret',
      description: `Answers the hook with its new \`secret\`, shown this once. For ${PREVIOUS_SECRET_HOURS} hours deliveries carry a signature by the previous secret too (Standard Webhooks' space-separated signatures), so a receiver can switch without losing one.`,
      response: serializer.itemSchema(hookSchema),
      handler: async ({ params, caller, ctx }) => {
        const row = await rotateWebHookSecret(db, ownerOf(caller, ctx), params.id);
        return serializer.item({ ...row, shownSecret: row.secret }, request(ctx.path));
      },
    })
    .action({
      method: 'get',
      path: '/attempts',
      summary: `The last ${ATTEMPTS_SHOWN} delivery attempts of a web hook of the caller, newest first`,
      description:
        'Each attempt: when, which event, the status code the receiver answered (null when none came: refused address, timeout, connection error), how long it took, and why it failed.',
      response: attemptsSchema,
      handler: async ({ params, caller, ctx }) => {
        const attempts = await lastAttempts(db, ownerOf(caller, ctx), params.id);
        return {
          '@context': contextIri(hookView),
          '@id': ctx.path,
          '@type': 'hydra:Collection' as const,
          'hydra:member': attempts.map(attemptFields),
          'hydra:totalItems': attempts.length,
        };
      },
    });
}
