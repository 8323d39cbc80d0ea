// The operations an OpenAPI document lists, as the robustness walk sends them requests.

export interface Schema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
}

export interface Operation {
  method: string;
  path: string;
  pathParams: string[];
  queryParams: string[];
  bodyType: string | undefined;
  bodySchema: Schema | undefined;
  /** Media types the operation documents per status (`/oauth/accessToken` answers OAuth's JSON errors). */
  documented: Record<string, string[]>;
  /** A browser endpoint (it answers with a redirect): its errors may be HTML pages. */
  browser: boolean;
}

export interface OpenApi {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { in: string; name: string }[];
        requestBody?: { content: Record<string, { schema: Schema }> };
        responses?: Record<string, { content?: Record<string, unknown> }>;
      }
    >
  >;
  components?: { schemas?: Record<string, Schema> };
}

/** Every operation of the document: its parameters, first body type and schema, documented answers. */
export function operationsOf(document: OpenApi): Operation[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => {
      const [bodyType, media] = Object.entries(op.requestBody?.content ?? {})[0] ?? [];
      return {
        method: method.toUpperCase(),
        path,
        pathParams: (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
        bodyType,
        bodySchema: media?.schema,
        documented: Object.fromEntries(
          Object.entries(op.responses ?? {}).map(([status, r]) => [status, Object.keys(r.content ?? {})]),
        ),
        browser: Object.keys(op.responses ?? {}).some((status) => status.startsWith('3')),
      };
    }),
  );
}
