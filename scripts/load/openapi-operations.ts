// The operations an OpenAPI document lists, as the generated requests (test/robustness-hostile-input.test.ts,
// the soak) send them.

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
  /**
   * The credentials it accepts: one scheme list per alternative (`[]` is the anonymous
   * alternative); empty when the document names none, as for public routes.
   */
  security: string[][];
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
        security?: Record<string, string[]>[];
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
        security: (op.security ?? []).map((alternative) => Object.keys(alternative)),
      };
    }),
  );
}

/**
 * True when no alternative of the operation's security is met by the schemes a caller holds
 * valid credentials for: its answer must then be a 401.
 */
export function needsCredentials(op: Operation, held: ReadonlySet<string>): boolean {
  return op.security.length > 0 && !op.security.some((schemes) => schemes.every((s) => held.has(s)));
}

/** The operations a request path (as the server resolves it, without its query) would be routed to. */
export function operationsAt(operations: readonly Operation[], method: string, path: string): Operation[] {
  const { pathname } = new URL(path, 'http://api.test');
  return operations.filter((op) => op.method === method && templatePattern(op.path).test(pathname));
}

const patterns = new Map<string, RegExp>();
function templatePattern(template: string): RegExp {
  let pattern = patterns.get(template);
  if (!pattern) {
    const source = template
      .split(/(\{[^}]+\})/)
      .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('');
    pattern = new RegExp(`^${source}$`);
    patterns.set(template, pattern);
  }
  return pattern;
}
