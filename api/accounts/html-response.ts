/** How the login and registration pages are answered: strict headers, HTML even for errors. */
import type { Context, Middleware } from 'koa';
import { redirectTarget } from '../../shared/accounts/clients.ts';
import { HttpError } from '../http/errors.ts';
import { alert, page } from './html.ts';

/**
 * Sets a strict CSP on our pages; forms may post to us and be redirected to the client's
 * redirect_uri (browsers apply form-action to that redirect too: a native app's private-use
 * scheme is named by its scheme).
 */
export function securityHeaders(ctx: Context, redirectUri?: unknown): void {
  const target = typeof redirectUri === 'string' ? redirectTarget(redirectUri) : undefined;
  const formAction = ["'self'", target?.source ?? ''].filter(Boolean).join(' ');
  ctx.set(
    'Content-Security-Policy',
    `default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
  );
  ctx.set('Cache-Control', 'no-store');
}

export function render(ctx: Context, status: number, title: string, body: string, redirectUri?: unknown): void {
  securityHeaders(ctx, redirectUri);
  ctx.status = status;
  ctx.type = 'html';
  ctx.body = page(title, body);
}

export function renderProblem(
  ctx: Context,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  ctx.set(headers);
  render(ctx, status, 'Sign-in problem', `<h1>Sign-in problem</h1>${alert(message)}<p>Go back and try again.</p>`);
}

/** Renders HttpErrors of these pages as HTML (they are browser pages, not API calls). */
export const htmlErrors: Middleware = async (ctx, next) => {
  try {
    await next();
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    renderProblem(ctx, error.status, error.message, error.headers);
  }
};
