import type { Page, RequestView } from './format.ts';

/**
 * The query string as sent, with what a URI may not hold percent-encoded (`page[size]` becomes
 * `page%5Bsize%5D`, a raw space `%20`), so links are valid URIs; everything else is kept as is.
 */
export function uriQuery(querystring: string): string {
  return querystring.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]/g, (c) => encodeURIComponent(c));
}

/** Absolute URL of the request itself. */
export function selfUrl(req: RequestView): string {
  return `${req.baseUrl}${selfIri(req)}`;
}

/** Path-only IRI of the request (JSON-LD `@id`s are relative to the API, as API Platform writes them). */
export function selfIri(req: RequestView): string {
  return `${req.path}${req.querystring ? `?${uriQuery(req.querystring)}` : ''}`;
}

/** The request with another page number, every other parameter kept (and the limit made explicit). */
export function pageQuery(
  req: RequestView,
  page: number,
  limit: number,
  pageParam = 'page',
  extra: Record<string, string> = {},
): string {
  const qs = new URLSearchParams(req.querystring);
  qs.set(pageParam, String(page));
  if (pageParam === 'page' && !qs.has('limit')) qs.set('limit', String(limit));
  for (const [name, value] of Object.entries(extra)) qs.set(name, value);
  return qs.toString();
}

/** The next page's query: the page number plus the list's cursor when it gives one. */
export function nextPageQuery(req: RequestView, page: Page<unknown>): string {
  return pageQuery(req, page.page + 1, page.limit, page.pageParam, page.next);
}

/** The last page number, when the total is known (1 for an empty list). */
export function lastPage(page: Page<unknown>): number | undefined {
  return page.total === undefined ? undefined : Math.max(1, Math.ceil(page.total / page.limit));
}

/** Whether a page follows this one: from the total when counted, else from the list's own answer. */
export function hasNextPage(page: Page<unknown>): boolean {
  const last = lastPage(page);
  return last === undefined ? Boolean(page.hasNext || page.next) : page.page < last;
}

/** The request with the keyset cursor `param` set to `value`, or dropped (the first page). */
export function keysetQuery(req: RequestView, param: string, value?: string): string {
  const qs = new URLSearchParams(req.querystring);
  qs.delete(param);
  if (value !== undefined) qs.set(param, value);
  return qs.toString();
}
