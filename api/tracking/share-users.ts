import { z } from 'zod';
import { iri, TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import { shareUserFields } from '../../shared/tracking/sharing/share-fields.ts';
import {
  answerShareUser,
  createShareUser,
  deleteShareUser,
  findShareUser,
  listShareUsers,
  MAX_SHARES_ACCEPTED,
  MAX_SHARES_GIVEN,
  SHARE_DIRECTIONS,
  SHARE_STATUSES,
  type ShareStatus,
  type ShareUserRow,
} from '../../shared/tracking/sharing/share-users.ts';
import type { AppContext } from '../context.ts';
import type { HydraView } from '../http/formats/format.ts';
import type { ApiRouter } from '../http/route.ts';
import {
  dateFilterOf,
  dateFilterShape,
  dateTimeOut,
  iriOf,
  listFilterOf,
  listFilterShape,
  orderOf,
  orderShape,
  pagingShape,
  refOf,
  writeBody,
} from './schemas.ts';
import { trackingResource } from './tracking-resource.ts';

/**
 * /v2/share_users (docs/tracking-sharing-users.md): a user shares their activities with another,
 * who accepts or refuses. Rules and storage: shared/tracking/sharing/share-users.ts.
 */

const PATH = '/share_users';
const userIri = (description: string) =>
  z.string().meta({ format: 'iri-reference', example: '/v2/users/a1b2c3', description });

const shareUserSchema = z
  .object({
    id: z.string(),
    user: userIri('the user shared with (the friend)'),
    createdAt: dateTimeOut,
    updatedAt: dateTimeOut.meta({ description: 'the creation, then each answer of the friend' }),
    owner: userIri('extension: the user who shares their activities'),
    status: z.enum(SHARE_STATUSES).meta({
      description:
        'extension: `pending` until the friend answers, then `accepted` (the friend sees what the owner shows followers) or `refused`',
    }),
  })
  .meta({ id: 'ShareUser' });

const shareUserView: HydraView<ShareUserRow, typeof shareUserSchema> = {
  type: 'ShareUser',
  path: `${TRACKING_PREFIX}${PATH}`,
  id: (s) => s.id,
  fields: shareUserFields,
};

const READ_ONLY = ['id', 'owner', 'createdAt', 'updatedAt'];
const createBody = writeBody(
  'ShareUser',
  { user: iriOf('users').meta({ description: 'the user to share your activities with' }) },
  [...READ_ONLY, 'status'],
);
/** The friend's answer; the rest of a ShareUser sent back is ignored (`user` cannot change). */
const answerBody = writeBody(
  'ShareUser',
  {
    status: z
      .enum(['accepted', 'refused'])
      .meta({ description: '`accepted` or `refused`; only the friend (`user`) answers' }),
  },
  [...READ_ONLY, 'user'],
);

const SHARE_ORDERS = ['updatedAt'] as const;
const listQuery = z.object({
  direction: z.enum(SHARE_DIRECTIONS).default('given').meta({
    description: '`given` (default): the shares you give; `received`: the shares given to you (your friends list)',
  }),
  ...listFilterShape('status', z.enum(SHARE_STATUSES)),
  ...listFilterShape('user', refOf('users')),
  ...dateFilterShape('updatedAt'),
  ...orderShape(SHARE_ORDERS),
  ...pagingShape,
});

/** /v2/share_users: the shares the caller gives and receives. */
export function shareUsersResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  trackingResource(router, app, {
    path: PATH,
    item: shareUserSchema,
    hydra: shareUserView,
    notFound: 'No such share (or neither yours nor given to you)',
  })
    .list({
      summary: 'The shares the caller gives (or, with `direction=received`, receives)',
      description:
        "`direction=given` (default) lists the caller's shares, `direction=received` those given to the caller: with `status=accepted`, the users whose activities the caller sees (their friends list). `status` / `status[]` (`pending`, `accepted`, `refused`); `user` / `user[]` (IRIs or ids: the other side of the share, the friend of a given one, the owner of a received one); `updatedAt[after|before|strictly_after|strictly_before]` and `order[updatedAt]=asc|desc` (default ascending, ties by id): the change feed of shares (a deleted share leaves the list; its `share_user_delete` event tells). Paging: `page`, `limit` (default 30, at most 100).",
      query: listQuery,
      handler: async ({ query, ctx, caller, principal }) => {
        const found = await app.reads.read(principal.accountId, ({ db }) =>
          listShareUsers(
            db,
            caller.id,
            {
              direction: query.direction,
              statuses: listFilterOf<ShareStatus>(query, 'status'),
              users: listFilterOf<string>(query, 'user'),
              updatedAt: dateFilterOf(query, 'updatedAt'),
              order: orderOf(query, ctx.querystring, SHARE_ORDERS)[0]?.direction,
            },
            query,
          ),
        );
        return { ...found, page: query.page, limit: query.limit };
      },
    })
    .create({
      summary: 'Share your activities with another user (they accept or refuse)',
      description: `\`user\`: the user to share with, by IRI. The share is \`pending\` until they answer (PUT): nothing is shown before they accept. One share per user you share with: a second is a 409 naming the first; yourself, an unknown user or one whose account is being deleted is a 422 naming \`user\`. At most ${MAX_SHARES_GIVEN} shares (any status; 409 beyond). The friend hears of it by a \`share_request\` event.`,
      body: createBody,
      errors: { 409: `You share with this user already (the share is named), or with ${MAX_SHARES_GIVEN} users` },
      handler: async ({ body, caller }) => createShareUser(db, caller.id, body.user),
      location: (s) => iri('share_users', s.id),
    })
    .get({
      summary: 'A share the caller gives or receives',
      handler: async ({ params, caller }) => findShareUser(db, caller.id, params.id),
    })
    .update({
      summary: 'Accept or refuse a share given to you',
      description: `\`{"status": "accepted"}\` or \`{"status": "refused"}\`, by the friend (\`user\`) only: the owner's PUT is a 403. An answer may change later (refuse what was accepted, accept what was refused); accepting sends \`share_user_create\` to both users. A user accepts at most ${MAX_SHARES_ACCEPTED} shares at once (409 beyond). The other members of a ShareUser sent back are ignored.`,
      body: answerBody,
      errors: {
        403: 'The caller gives this share: only the user it is given to answers it',
        409: `The caller has accepted ${MAX_SHARES_ACCEPTED} shares already`,
      },
      handler: async ({ params, body, caller }) => answerShareUser(db, caller.id, params.id, body.status),
    })
    .remove({
      summary: 'Delete a share, given or received',
      description:
        'Either user deletes it, whatever its status: the friend stops seeing the owner’s activities with the transaction (no cache). Both users get `share_user_delete`.',
      handler: async ({ params, caller }) => deleteShareUser(db, caller.id, params.id),
    });
}
