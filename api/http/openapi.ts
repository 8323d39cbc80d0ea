import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject } from 'zod-openapi';
import { addExamples } from './openapi-examples.ts';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** Collects operations as routes are declared, then builds one OpenAPI 3.1 document. */
export class OpenApiRegistry {
  readonly #paths: ZodOpenApiPathsObject = {};
  readonly #operationIds = new Map<string, string>();
  #document: ReturnType<typeof createDocument> | undefined;

  add(koaPath: string, method: HttpMethod, operation: ZodOpenApiOperationObject): void {
    const path = koaPath.replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}');
    const taken = operation.operationId && this.#operationIds.get(operation.operationId);
    if (taken && taken !== `${method} ${path}`)
      throw new Error(`operationId ${operation.operationId} of ${method} ${path} is already ${taken}'s`);
    if (operation.operationId) this.#operationIds.set(operation.operationId, `${method} ${path}`);
    this.#paths[path] = { ...this.#paths[path], [method]: operation };
    this.#document = undefined;
  }

  document(serverUrl: string): ReturnType<typeof createDocument> {
    if (this.#document) return this.#document;
    this.#document = createDocument({
      openapi: '3.1.0',
      info: {
        title: 'Sports backend',
        version: '0.1.0',
        description:
          'Places (GeoJSON), sports catalogue (JSON:API), community partners, tracking data (JSON-LD/Hydra) and accounts.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: serverUrl }],
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description:
              'An access token of the accounts service (see `openIdConnect`), holding the scope `<service>:read` or `<service>:write` of the service called.',
          },
          apiKey: {
            type: 'apiKey',
            in: 'header',
            name: 'x-api-key',
            description: "An API key of the token's own client (every /v2 call sends both).",
          },
          basic: {
            type: 'http',
            scheme: 'basic',
            description: "A client's id and secret, for the client's own API key routes.",
          },
          openIdConnect: {
            type: 'openIdConnect',
            openIdConnectUrl: `${serverUrl}/.well-known/openid-configuration`,
            description:
              'The login that issues the bearer tokens: authorization code with PKCE (S256) at /authorize, then /token (docs/accounts.md).',
          },
        },
      },
      paths: this.#paths,
    });
    addExamples(this.#document);
    return this.#document;
  }
}
