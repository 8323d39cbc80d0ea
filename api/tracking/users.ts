import { z } from 'zod';
import { ACCOUNT_SCOPE } from '../../shared/auth/scopes.ts';
import { MAX_MAP_HIDDEN_ENDS, VISIBILITIES } from '../../shared/tracking/sharing/visibility.ts';
import { userFields } from '../../shared/tracking/users/fields.ts';
import { scheduleDeleteRule } from '../../shared/tracking/users/schedule-delete.ts';
import { type TrackingUser, updateTrackingUser, userVisibleTo } from '../../shared/tracking/users/store.ts';
import type { AppContext } from '../context.ts';
import { requireScope } from '../http/auth.ts';
import type { HydraView } from '../http/formats/format.ts';
import type { ApiRouter } from '../http/route.ts';
import { dateTime, writeBody } from './schemas.ts';
import { trackingResource } from './tracking-resource.ts';

/** The User of the spec, field for field. */
const userSchema = z.object({
  id: z.string().meta({ description: "the account's ldid" }),
  oneId: z.string().nullable(),
  gender: z.number().int().nullable().meta({ description: '1 male, 2 female, 3 other; null: not said' }),
  roles: z.array(z.string()).meta({ example: ['ROLE_USER'] }),
  language: z.string().nullable().meta({ description: 'ISO 639-1', example: 'fr' }),
  country: z.string().nullable().meta({ description: 'ISO 3166-1 alpha-2', example: 'FR' }),
  imageUrl: z.string().nullable(),
  birthDate: z.string().nullable().meta({ format: 'date', example: '1990-04-21' }),
  createdAt: z.string().meta({ format: 'date-time' }),
  updatedAt: z.string().meta({ format: 'date-time' }),
  scheduleDelete: z
    .string()
    .nullable()
    .meta({ format: 'date-time', description: 'when the account and all its data are deleted; null: not planned' }),
  timezone: z.string().nullable().meta({
    description:
      'extension: the IANA time zone the statistics by period are cut in (docs/tracking-statistics.md); null: UTC',
    example: 'Europe/Paris',
  }),
  defaultVisibility: z.enum(VISIBILITIES).meta({
    description:
      'extension: the `visibility` of a new activity when it says none (docs/tracking-sharing-users.md); `private` until set',
  }),
  defaultMapVisibility: z.enum(VISIBILITIES).meta({ description: 'extension: the `mapVisibility` of a new activity' }),
  defaultMapHiddenEnds: z
    .number()
    .int()
    .meta({ description: 'extension: the `mapHiddenEnds` of a new activity, metres', example: 0 }),
});

const userView: HydraView<TrackingUser, typeof userSchema> = {
  type: 'User',
  path: '/v2/users',
  id: (u) => u.id,
  fields: userFields,
};

/** PUT: the editable fields (each may be null to clear it); the rules are in shared/tracking/users/store.ts. */
const userBody = writeBody(
  'User',
  {
    gender: z.number().int().nullable().optional().meta({ description: '1 male, 2 female, 3 other' }),
    language: z.string().max(16).nullable().optional().meta({ description: 'ISO 639-1', example: 'fr' }),
    country: z.string().max(16).nullable().optional().meta({ description: 'ISO 3166-1 alpha-2', example: 'FR' }),
    imageUrl: z.string().nullable().optional().meta({ description: 'http or https URL' }),
    birthDate: z.string().max(16).nullable().optional().meta({ format: 'date', example: '1990-04-21' }),
    scheduleDelete: dateTime.nullable().optional().meta({
      description:
        'when the account and all its data are deleted: at least ACCOUNT_DELETE_GRACE_S from now; null cancels',
    }),
    timezone: z.string().max(64).nullable().optional().meta({
      description: 'an IANA time zone name (stored in its canonical spelling); null: UTC',
      example: 'Europe/Paris',
    }),
    defaultVisibility: z.enum(VISIBILITIES).optional(),
    defaultMapVisibility: z.enum(VISIBILITIES).optional(),
    defaultMapHiddenEnds: z.number().int().min(0).max(MAX_MAP_HIDDEN_ENDS).optional(),
  },
  ['id', 'oneId', 'roles', 'createdAt', 'updatedAt'],
);

const userParams = z.object({ id: z.string().min(1).max(128) });

/** /v2/me and /v2/users/{id}: the caller's own User (created on their first call). */
export function usersResource(router: ApiRouter, app: AppContext): void {
  const common = {
    item: userSchema,
    hydra: userView,
    notFound: 'No such user (a caller sees only their own)',
    tag: 'tracking users',
  };

  // `/v2/me/` (the spec's spelling) reaches the same route: the router ignores a trailing slash.
  trackingResource(router, app, { ...common, path: '/me', itemPath: '', itemParams: z.object({}) }).get({
    summary: "The caller's User",
    description: "The tracking user of the token's account, created from the token's claims on the first call.",
    handler: ({ caller }) => caller,
  });

  trackingResource(router, app, { ...common, path: '/users', itemParams: userParams })
    .get({
      summary: 'A User (the caller only)',
      description: "Any id but the caller's answers 404.",
      handler: async ({ params, caller }) => userVisibleTo(caller, params.id),
    })
    .update({
      summary: "Change the caller's User",
      description: [
        'Editable: `gender` (1, 2, 3), `language` (ISO 639-1), `country` (ISO 3166-1 alpha-2 that exists), `imageUrl` (http/https), `birthDate` (`YYYY-MM-DD`, not in the future), `scheduleDelete` (date-time with offset; needs the `account` scope beside `tracking:write`, 403 otherwise), `timezone` (an IANA zone name such as `Europe/Paris`, stored in its canonical spelling; our extension: the statistics by period are cut in it, and a change rebuilds them in the background). Each may be null to clear it.',
        `\`defaultVisibility\`, \`defaultMapVisibility\` (\`private\`, \`followers\`, \`public\`) and \`defaultMapHiddenEnds\` (0 to ${MAX_MAP_HIDDEN_ENDS} metres): what new activities get when they say nothing (extensions, docs/tracking-sharing-users.md; never null).`,
        scheduleDeleteRule(app.config.ACCOUNT_DELETE_GRACE_S),
        'Fields not sent stay as they are. Read-only fields (`id`, `oneId`, `roles`, `createdAt`, `updatedAt`, `@id`...) are ignored; any other member is a 422 naming it.',
      ].join('\n\n'),
      body: userBody,
      errors: {
        403: 'The body sets `scheduleDelete` and the token lacks the `account` scope',
        409: "The account's deletion has started: nothing can be changed any more",
      },
      handler: async ({ params, body, caller, principal }) => {
        const user = userVisibleTo(caller, params.id);
        // Scheduling the account's deletion acts on the account, not on tracking data.
        if (body.scheduleDelete !== undefined) requireScope(principal, ACCOUNT_SCOPE);
        return updateTrackingUser(app.db, user, body, { deleteGraceSeconds: app.config.ACCOUNT_DELETE_GRACE_S });
      },
    });
}
