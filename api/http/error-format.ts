import type { FieldError, HttpError } from './errors.ts';

/** The error dialects of our services: RFC 9457 problem details, JSON:API errors, API Platform's Hydra. */
export type ErrorFormat = 'problem' | 'jsonapi' | 'hydra';

export interface RenderedError {
  contentType: string;
  body: unknown;
}

/** The dialect of the service mounted under a path; problem details where no service is. */
export type ErrorFormatOf = (path: string) => ErrorFormat;

/**
 * Resolves a path to the dialect of the mounted service whose prefix is the longest match, so
 * unknown routes, body-parser errors and refused requests answer in the service's own format.
 */
export function errorFormatsByPrefix(mounts: readonly { prefix: string; format: ErrorFormat }[]): ErrorFormatOf {
  const sorted = [...mounts].sort((a, b) => b.prefix.length - a.prefix.length);
  return (path) =>
    sorted.find((m) => path === m.prefix || path.startsWith(m.prefix.endsWith('/') ? m.prefix : `${m.prefix}/`))
      ?.format ?? 'problem';
}

export function renderError(format: ErrorFormat, error: HttpError, instance: string): RenderedError {
  switch (format) {
    case 'jsonapi':
      return { contentType: 'application/vnd.api+json', body: jsonApi(error) };
    case 'hydra':
      return { contentType: 'application/ld+json', body: hydra(error) };
    default:
      return {
        contentType: 'application/problem+json',
        body: {
          type: 'about:blank',
          title: error.title,
          status: error.status,
          detail: error.message,
          instance,
          errors: error.errors,
        },
      };
  }
}

/**
 * JSON:API error objects: a body field is named by a JSON pointer, a query parameter by
 * `parameter`; the request path and path parameters have no `source` member, so the detail names them.
 */
function jsonApi(error: HttpError) {
  const base = { status: String(error.status), title: error.title };
  if (error.errors.length === 0) return { errors: [{ ...base, detail: error.message }] };
  return {
    errors: error.errors.map((e) => {
      if (e.path.startsWith('query.')) return { ...base, detail: e.message, source: { parameter: e.path.slice(6) } };
      if (e.path === 'body' || e.path.startsWith('body.') || e.path.startsWith('body['))
        return { ...base, detail: e.message, source: { pointer: pointer(e) } };
      return { ...base, detail: `${e.path}: ${e.message}` };
    }),
  };
}

function pointer(e: FieldError): string {
  const parts = e.path
    .replace(/^body\.?/, '')
    .split(/[.[\]]+/)
    .filter(Boolean);
  // RFC 6901: '' is the whole document; `~` and `/` in a member name are escaped.
  return parts.map((p) => `/${p.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

/**
 * API Platform's shapes: a ConstraintViolationList for 422, a hydra:Error otherwise. As API
 * Platform 3.2+ writes them: `@id`, and the RFC 7807 members (`title`, `detail`, `status`,
 * `type`) beside the `hydra:` ones that older clients read.
 */
function hydra(error: HttpError) {
  const description = error.message;
  const common = { status: error.status, type: `/v2/errors/${error.status}`, title: 'An error occurred' };
  if (error.status === 422) {
    const detail = error.errors.map((e) => `${stripLocation(e.path)}: ${e.message}`).join('\n') || description;
    return {
      '@context': '/v2/contexts/ConstraintViolationList',
      '@id': `/v2/errors/${error.status}`,
      '@type': 'ConstraintViolationList',
      'hydra:title': 'An error occurred',
      'hydra:description': detail,
      violations: error.errors.map((e) => ({ propertyPath: stripLocation(e.path), message: e.message })),
      ...common,
      detail,
    };
  }
  // Other statuses have no violations member: the description names each field.
  const detail = [description, ...error.errors.map((e) => `${e.path}: ${e.message}`)].join('\n');
  return {
    '@context': '/v2/contexts/Error',
    '@id': `/v2/errors/${error.status}`,
    '@type': 'hydra:Error',
    'hydra:title': 'An error occurred',
    'hydra:description': detail,
    ...common,
    detail,
  };
}

function stripLocation(path: string): string {
  return path.replace(/^(body|query|params)\.?/, '');
}
