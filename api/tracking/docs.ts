import type { Context } from 'koa';
import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { errorResponse } from '../http/error-schemas.ts';
import { notFound } from '../http/errors.ts';
import { ENTRYPOINT, ERROR_TYPES } from '../http/formats/hydra-context.ts';
import { apiDocumentation, contextDocument, entrypoint, type HydraApi } from '../http/formats/hydra-documentation.ts';
import { addOperation } from '../http/operation.ts';
import type { ApiRouter } from '../http/route.ts';

const TITLE = 'Sports tracking data';
const DESCRIPTION =
  "Users' sport activities with their data streams and GPS tracks, records, devices and body measures, described by the sports and datatypes referentials.";

const JSON_LD = 'application/ld+json';
const document = z.object({ '@context': z.unknown() }).loose();
/** Public, written by their handlers as JSON-LD. */
const PUBLIC_DOCUMENT = {
  access: 'public',
  tag: 'tracking documentation',
  writesResponse: true,
} as const;
const contextParams = z.object({ type: z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,99}$/) });

/**
 * The entrypoint, the Hydra API documentation and the JSON-LD contexts, generated from the
 * resources declared on the router (so each new resource appears in all three). They hold no
 * user data and API Platform's clients (Admin, api-doc-parser, JSON-LD processors) fetch them
 * before they have credentials: they are public.
 */
export function documentationRoutes(router: ApiRouter, app: AppContext): void {
  const api = (): HydraApi => ({
    prefix: router.prefix,
    publicUrl: app.config.PUBLIC_URL,
    title: TITLE,
    description: DESCRIPTION,
    classes: app.hydra.classes(router.prefix),
  });
  // Declarations are over once the app is built; the version guards against any made later.
  let built: { version: number; docs: object; entrypoint: object; contexts: Map<string, object> } | undefined;
  const current = () => {
    if (built?.version !== app.hydra.version) {
      const a = api();
      // Every type served has its context: the resources', the entrypoint's and the errors'.
      const contexts = new Map<string, object>();
      for (const type of [...a.classes.map((c) => c.type), ENTRYPOINT, ...ERROR_TYPES]) {
        const context = contextDocument(a, type);
        if (context) contexts.set(type, context);
      }
      built = { version: app.hydra.version, docs: apiDocumentation(a), entrypoint: entrypoint(a), contexts };
    }
    return built;
  };
  const send = (ctx: Context, body: object) => {
    ctx.type = JSON_LD;
    ctx.body = body;
  };

  addOperation(router, app, {
    method: 'get',
    path: '/',
    ...PUBLIC_DOCUMENT,
    spec: {
      summary: 'The API entrypoint: the IRI of every collection',
      description: 'Also at `/v2` (no trailing slash). Public: no credentials needed.',
      responses: {
        200: { description: 'The entrypoint (`@type` Entrypoint)', schema: document, contentType: JSON_LD },
      },
      handler: ({ ctx }) => send(ctx, current().entrypoint),
    },
  });

  addOperation(router, app, {
    method: 'get',
    path: '/docs.jsonld',
    ...PUBLIC_DOCUMENT,
    spec: {
      summary: 'The Hydra API documentation (hydra:ApiDocumentation)',
      description:
        "Every class with its properties and operations, the entrypoint's collections and the constraint violations, in API Platform's shape (its api-doc-parser and Admin read it). Announced by the `Link` header of every /v2 response. Public.",
      responses: { 200: { description: 'The API documentation', schema: document, contentType: JSON_LD } },
      handler: ({ ctx }) => send(ctx, current().docs),
    },
  });

  addOperation(router, app, {
    method: 'get',
    path: '/contexts/:type',
    params: contextParams,
    ...PUBLIC_DOCUMENT,
    spec: {
      summary: 'The JSON-LD context of a type (`@context` of its documents)',
      description:
        'Each property maps to `<docs>#Type/property`; links are typed `@id`. Exists for every `@type` the service serves, `Entrypoint`, `ConstraintViolationList` and `Error` included. Public.',
      responses: {
        200: { description: 'The context document', schema: document, contentType: JSON_LD },
        404: errorResponse('hydra', 'No such type'),
      },
      handler: ({ ctx, params }) => {
        const context = current().contexts.get(params.type);
        if (!context) throw notFound(`No JSON-LD context for the type ${params.type}`);
        send(ctx, context);
      },
    },
  });
}
