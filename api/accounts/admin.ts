import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { endAccountSessions, setAccountDisabled } from '../../shared/accounts/revocation.ts';
import type { AppContext } from '../context.ts';
import { hasRole, requireBearer } from '../http/auth.ts';
import { forbidden, notFound } from '../http/errors.ts';
import { ApiRouter } from '../http/route.ts';

const params = z.object({ id: z.uuid('an account id (uuid)') });

/** Staff only: a bearer of a staff account holding the `admin` scope (shared/auth/token-rules.ts). */
function requireStaff(ctx: Context): void {
  if (!hasRole(ctx.state.principal, 'staff'))
    throw forbidden('Only staff may do this (a staff account, with a token holding the admin scope)');
}

/**
 * Staff actions on accounts: disable (no sign-in, every token and session ended), enable, and
 * end every session, grant and token of an account. The CLI does the same (`npm run account`).
 */
export function accountsAdminRouter(app: AppContext): Router {
  const r = new ApiRouter({
    prefix: '/api/v1/accounts',
    errorFormat: 'problem',
    registry: app.registry,
    bodyLimitBytes: app.config.bodyLimitBytes,
    tag: 'accounts',
  });
  const staff = [requireBearer(app.verifier)];
  const responses = {
    204: { description: 'Done' },
    401: { description: 'Missing or invalid token' },
    403: { description: 'Not staff, or the token lacks the admin scope' },
    404: { description: 'No such account' },
  };
  const actions = [
    {
      method: 'post',
      path: '/:id/disable',
      summary: 'Disable an account: no sign-in; its tokens, sessions and grants end at once',
      act: (id: string) => setAccountDisabled(app.db, id, true),
    },
    {
      method: 'post',
      path: '/:id/enable',
      summary: 'Enable a disabled account again',
      act: (id: string) => setAccountDisabled(app.db, id, false),
    },
    {
      method: 'delete',
      path: '/:id/sessions',
      summary: 'End every session, grant and token of an account (the user must sign in again)',
      act: async (id: string) => (await endAccountSessions(app.db, id)) !== undefined,
    },
  ] as const;
  for (const { act, ...route } of actions) {
    r.add({
      ...route,
      security: ['bearer'],
      params,
      middleware: staff,
      responses,
      handler: async (ctx, { params: p }) => {
        requireStaff(ctx);
        if (!(await act(p.id))) throw notFound('Account not found');
        ctx.status = 204;
      },
    });
  }
  return r.router;
}
