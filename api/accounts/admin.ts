import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import { endAccountSessions, setAccountDisabled } from '../../shared/accounts/revocation.ts';
import { listAccounts, setAccountRoles } from '../../shared/accounts/staff-accounts.ts';
import { ROLES } from '../../shared/db/schema/accounts.ts';
import type { AppContext } from '../context.ts';
import { hasRole } from '../http/auth.ts';
import { forbidden, notFound } from '../http/errors.ts';
import { addOperation } from '../http/operation.ts';
import { ApiRouter } from '../http/route.ts';

const params = z.object({ id: z.uuid('an account id (uuid)') });

/** Staff only: a bearer of a staff account holding the `admin` scope (shared/auth/token-rules.ts). */
function requireStaff(ctx: Context): void {
  if (!hasRole(ctx.state.principal, 'staff'))
    throw forbidden('Only staff may do this (a staff account, with a token holding the admin scope)');
}

const role = z.enum(ROLES);
const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  after: z.coerce.number().int().min(0).optional().meta({ description: 'The `next` of the previous page' }),
  role: role.optional(),
  email: z.string().trim().min(3).max(320).optional(),
});
const listedAccount = z.object({
  id: z.uuid(),
  number: z.number().int(),
  email: z.string().nullable(),
  first_name: z.string(),
  last_name: z.string(),
  roles: z.array(role),
  disabled: z.boolean(),
  created_via: z.string(),
  created_at: z.string(),
});
const rolesBody = z.object({
  roles: z.array(role).max(ROLES.length).meta({ description: 'Every role the account holds (`user` is always kept)' }),
});

/**
 * Staff actions on accounts: list them, set their roles, disable (no sign-in, every token,
 * session and API key of their clients refused), enable, and end every session, grant and token
 * of an account. The CLI does the same (`npm run account`).
 */
export function accountsAdminRouter(app: AppContext): Router {
  const r = new ApiRouter({
    prefix: '/api/v1',
    errorFormat: 'problem',
    registry: app.registry,
    bodyLimitBytes: app.config.bodyLimitBytes,
    tag: 'accounts',
  });
  // Staff is checked after the token, before any input is read: others learn nothing from a 422 or a 404.
  const staff = {
    access: 'bearer',
    middleware: [
      async (ctx, next) => {
        requireStaff(ctx);
        await next();
      },
    ],
  } satisfies { access: 'bearer'; middleware: Middleware[] };
  const staffErrors = { 403: 'Not staff, or the token lacks the admin scope' } as const;
  const actions = [
    {
      method: 'post',
      path: '/accounts/:id/disable',
      summary: 'Disable an account: no sign-in; its tokens, sessions and grants end at once',
      act: (id: string) => setAccountDisabled(app.db, id, true),
    },
    {
      method: 'post',
      path: '/accounts/:id/enable',
      summary: 'Enable a disabled account again',
      act: (id: string) => setAccountDisabled(app.db, id, false),
    },
    {
      method: 'delete',
      path: '/accounts/:id/sessions',
      summary: 'End every session, grant and token of an account (the user must sign in again)',
      act: async (id: string) => (await endAccountSessions(app.db, id)) !== undefined,
    },
  ] as const;
  addOperation(r, app, {
    ...staff,
    method: 'get',
    path: '/accounts',
    success: {
      200: {
        description: 'A page of accounts',
        schema: z.object({ accounts: z.array(listedAccount), next: z.number().int().optional() }),
      },
    },
    spec: {
      summary: 'List accounts in creation order (keyset pages: `after` is the `next` of the previous page)',
      query: listQuery,
      errors: staffErrors,
      handler: ({ query }) => listAccounts(app.db, query),
    },
  });
  addOperation(r, app, {
    ...staff,
    method: 'put',
    path: '/accounts/:id/roles',
    params,
    notFound: 'No such account',
    success: {
      200: { description: 'The roles now held', schema: z.object({ roles: z.array(role), changed: z.boolean() }) },
    },
    spec: {
      summary: "Set an account's roles; a change ends its sessions, grants and tokens",
      body: rolesBody,
      errors: staffErrors,
      handler: async ({ params: p, body }) => {
        const result = await setAccountRoles(app.db, p.id, body.roles);
        if (!result) throw notFound('Account not found');
        return result;
      },
    },
  });
  for (const { act, method, path, summary } of actions)
    addOperation(r, app, {
      ...staff,
      method,
      path,
      params,
      notFound: 'No such account',
      status: 204,
      success: { 204: { description: 'Done' } },
      spec: {
        summary,
        errors: staffErrors,
        handler: async ({ params: p }) => {
          if (!(await act(p.id))) throw notFound('Account not found');
        },
      },
    });
  return r.router;
}
