import type { Middleware } from 'koa';

/** The relation API Platform's clients look for to find the API documentation. */
export const API_DOCUMENTATION_REL = 'http://www.w3.org/ns/hydra/core#apiDocumentation';

/** `<https://host/v2/docs.jsonld>; rel="http://www.w3.org/ns/hydra/core#apiDocumentation"`. */
export function apiDocumentationLink(publicUrl: string, prefix: string): string {
  return `<${publicUrl}${prefix}/docs.jsonld>; rel="${API_DOCUMENTATION_REL}"`;
}

/**
 * Announces the Hydra API documentation on every response under a Hydra service's prefixes
 * (each such service serves it at `<prefix>/docs.jsonld`), errors included. It runs at the
 * application level, before rate limits, body parsing and routing, because those answer
 * requests that never reach the service's router (429, 400, unknown routes, 405).
 */
export function hydraDocumentationLink(
  publicUrl: string,
  services: readonly { errorFormat?: string; prefixes?: string[] }[],
): Middleware {
  // The longest prefix a path is under decides, as for error formats (a service may sit below another's prefix).
  // Each mount's header and the start of the paths below it, worked out once.
  const mounts = services
    .flatMap((s) =>
      (s.prefixes ?? []).map((prefix) => ({
        prefix,
        below: `${prefix.replace(/\/$/, '')}/`,
        link: s.errorFormat === 'hydra' ? apiDocumentationLink(publicUrl, prefix) : undefined,
      })),
    )
    .sort((a, b) => b.prefix.length - a.prefix.length);
  if (!mounts.some((m) => m.link)) return (_ctx, next) => next();
  return (ctx, next) => {
    const path = ctx.path;
    const mount = mounts.find((m) => path === m.prefix || path.startsWith(m.below));
    if (mount?.link) ctx.set('Link', mount.link);
    return next();
  };
}
