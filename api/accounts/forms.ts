import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import { badRequest, payloadTooLarge, unsupportedMediaType } from '../http/errors.ts';

const FORM_LIMIT = 16 * 1024;

/** Reads an application/x-www-form-urlencoded body (the login and registration forms). */
export async function readForm(ctx: Context): Promise<Record<string, string>> {
  if (!ctx.is('application/x-www-form-urlencoded'))
    throw unsupportedMediaType('Send the form as application/x-www-form-urlencoded');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > FORM_LIMIT) throw payloadTooLarge('The form is larger than 16 KB');
    chunks.push(chunk as Buffer);
  }
  const params = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  const out: Record<string, string> = {};
  for (const [k, v] of params) if (!(k in out)) out[k] = v;
  return out;
}

const CSRF_COOKIE = 'sb_csrf';

/**
 * CSRF protection for the HTML forms: a random token in an HttpOnly, SameSite=Lax cookie and
 * in a hidden field (double submit); a POST whose field does not match its cookie is refused.
 */
export function csrfToken(ctx: Context): string {
  let token = ctx.cookies.get(CSRF_COOKIE);
  if (!token || !/^[\w-]{43}$/.test(token)) {
    token = randomBytes(32).toString('base64url');
    ctx.cookies.set(CSRF_COOKIE, token, { httpOnly: true, sameSite: 'lax', secure: ctx.secure, overwrite: true });
  }
  return token;
}

export function checkCsrf(ctx: Context, form: Record<string, string>): void {
  const cookie = ctx.cookies.get(CSRF_COOKIE) ?? '';
  const sent = form.csrf ?? '';
  const a = Buffer.from(cookie);
  const b = Buffer.from(sent);
  if (!cookie || a.length !== b.length || !timingSafeEqual(a, b))
    throw badRequest('The form has expired or was not sent from this site; reload the page and try again');
}

export const csrfInput = (token: string) => `<input type="hidden" name="csrf" value="${token}">`;
