import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject } from 'zod-openapi';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** Collects operations as routes are declared, then builds one OpenAPI 3.1 document. */
export class OpenApiRegistry {
  readonly #paths: ZodOpenApiPathsObject = {};
  #document: ReturnType<typeof createDocument> | undefined;

  add(koaPath: string, method: HttpMethod, operation: ZodOpenApiOperationObject): void {
    const path = koaPath.replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}');
    this.#paths[path] = { ...this.#paths[path], [method]: operation };
    this.#document = undefined;
  }

  /** Changes an operation added before (a route that also takes other bodies, declared elsewhere). */
  extend(
    koaPath: string,
    method: HttpMethod,
    change: (operation: ZodOpenApiOperationObject | undefined) => ZodOpenApiOperationObject,
  ): void {
    const path = koaPath.replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}');
    this.add(koaPath, method, change(this.#paths[path]?.[method]));
  }

  document(serverUrl: string): ReturnType<typeof createDocument> {
    this.#document ??= createDocument({
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
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        },
      },
      paths: this.#paths,
    });
    return this.#document;
  }
}
