import type { Operation } from './openapi-operations.ts';

// The error formats of the services: every error answer of the robustness walk is checked against them.

/**
 * The error dialect each path must answer in (README, Services), once resolved as the client
 * sends it (`/sports/..` is `/`).
 */
export function expectedFormat(raw: string): 'problem' | 'jsonapi' | 'hydra' {
  const path = new URL(raw, 'http://api.test').pathname;
  if (/^\/v2(\/|$)/.test(path)) return 'hydra';
  if (/^\/(sports|groups)(\/|$)/.test(path)) return 'jsonapi';
  return 'problem';
}

export interface Answer {
  status: number;
  contentType: string;
  text: string;
}

/**
 * Why an error answer is in none of its formats, if so: the service's (by path), what the
 * operation documents for that status, or an HTML page from a browser endpoint.
 */
export function formatProblem(op: Operation, path: string, answer: Answer): string | undefined {
  const mediaType = answer.contentType.split(';')[0]?.trim() ?? '';
  if (op.documented[String(answer.status)]?.includes(mediaType)) {
    if (!mediaType.endsWith('json')) return undefined;
    try {
      JSON.parse(answer.text);
      return undefined;
    } catch {
      return `not JSON: ${answer.text.slice(0, 80)}`;
    }
  }
  if (op.browser && mediaType === 'text/html') return undefined;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return `not JSON (${answer.contentType}): ${answer.text.slice(0, 80)}`;
  }
  switch (expectedFormat(path)) {
    case 'problem': {
      if (!answer.contentType.startsWith('application/problem+json')) return `content type ${answer.contentType}`;
      const errors = body.errors as { path?: unknown; message?: unknown }[] | undefined;
      if (body.status !== answer.status || typeof body.title !== 'string') return 'no status/title';
      if (!Array.isArray(errors) || !errors.every((e) => typeof e.path === 'string' && typeof e.message === 'string'))
        return 'errors is not a list of {path, message}';
      return undefined;
    }
    case 'jsonapi': {
      if (!answer.contentType.startsWith('application/vnd.api+json')) return `content type ${answer.contentType}`;
      const errors = body.errors as { status?: unknown }[] | undefined;
      if (!Array.isArray(errors) || errors.length === 0 || !errors.every((e) => e.status === String(answer.status)))
        return 'no JSON:API errors with the status';
      return undefined;
    }
    case 'hydra': {
      if (!answer.contentType.startsWith('application/ld+json')) return `content type ${answer.contentType}`;
      const type = answer.status === 422 ? 'ConstraintViolationList' : 'hydra:Error';
      if (body['@type'] !== type) return `@type ${String(body['@type'])}`;
      return undefined;
    }
  }
}
