import { z } from 'zod';

/** Longest link stored (a browser's practical limit is far above; anything longer is not a link to show). */
export const MAX_LINK_LENGTH = 2000;

export const LINK_RULE = 'must be an absolute http or https URL (https://host/...), without user name or password';

/**
 * Why `value` is not a link we may publish, or undefined when it is one. Clients render these
 * fields as `href`s, so only absolute http(s) URLs pass: no `javascript:`/`data:` (script run on
 * click), no scheme-relative or `http:/host` forms (read differently by URL parsers and by
 * browsers against a base URL), no `user@host` credentials (`https://bank.example@evil.example`).
 * Case-insensitive scheme, as URLs are; the value is kept as sent.
 */
export function linkProblem(value: string): string | undefined {
  if (value.length > MAX_LINK_LENGTH) return `must be at most ${MAX_LINK_LENGTH} characters`;
  // URL.parse forgives leading spaces, tabs, newlines, backslashes and a missing slash: the raw text must not need it.
  if (!/^https?:\/\/[^\s/?#\\]/i.test(value) || /[\s\p{Cc}\\]/u.test(value)) return LINK_RULE;
  const url = URL.parse(value);
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') return LINK_RULE;
  if (url.username !== '' || url.password !== '') return LINK_RULE;
  return undefined;
}

/** The schema of a link field clients send (places website/booking_url; the partners rules call linkProblem). */
export const linkSchema = () =>
  z
    .string()
    .superRefine((value, ctx) => {
      const problem = linkProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .meta({ format: 'uri', description: 'an absolute http or https URL', example: 'https://club.example/book' });
