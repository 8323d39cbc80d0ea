import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet, { type HelmetOptions } from 'helmet';
import type { Middleware } from 'koa';

/**
 * helmet's response headers, worked out once at start: with our options (no per-request CSP
 * nonces) they never depend on the request, so each response gets the same list set in one loop
 * instead of a dozen nested middleware calls. A route may still replace one (the login pages and
 * the share page set their own Content-Security-Policy).
 */
export function securityHeaders(options: HelmetOptions): Middleware {
  const headers = helmetHeaders(options);
  return (ctx, next) => {
    for (const [name, value] of headers) ctx.res.setHeader(name, value);
    return next();
  };
}

/** The headers helmet sets on a response, read off a recording stand-in for one. */
export function helmetHeaders(options: HelmetOptions): [string, string][] {
  const csp = options.contentSecurityPolicy;
  const directives = typeof csp === 'object' && csp.directives ? Object.values(csp.directives) : [];
  if (directives.some((d) => typeof d === 'function' || (Array.isArray(d) && d.some((v) => typeof v === 'function'))))
    throw new Error('per-request Content-Security-Policy directives (nonces) cannot be worked out once');
  const headers: [string, string][] = [];
  const res = {
    setHeader: (name: string, value: string | number | readonly string[]) => {
      headers.push([name, Array.isArray(value) ? value.join(', ') : String(value)]);
    },
    removeHeader: () => {},
  } as unknown as ServerResponse;
  let done = false;
  helmet(options)({} as IncomingMessage, res, (err?: unknown) => {
    if (err) throw err;
    done = true;
  });
  if (!done) throw new Error('helmet did not finish synchronously');
  return headers;
}
