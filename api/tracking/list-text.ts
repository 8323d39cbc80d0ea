import type { Context } from 'koa';
import type { z } from 'zod';
import type { AppContext } from '../context.ts';
import type { HydraView, Page, RequestView } from '../http/formats/format.ts';
import { hydraSerializer, itemIri, listFilters, searchTemplate } from '../http/formats/hydra.ts';

/**
 * A tracking list written as text from its items, for the lists apps call in turns (statistics,
 * an activity's laps, splits and best efforts): each item's JSON by the resource's `fields`
 * writer, the envelope (`@context`, `hydra:view`, `hydra:search`...) by the Hydra format itself
 * with no member, so no object per member and field is built to be stringified; its `hydra:search`
 * (the same for every request to one path) is written once per path. Declared as the
 * list's representations of its two media types; the bytes are the format's, which
 * test/tracking-list-text.test.ts checks for each list.
 */

/** The JSON text of `view.fields(item)`, as JSON.stringify writes that object. */
export type FieldsText<T> = (item: T) => string;

/** A JSON string. */
export const str = JSON.stringify as (value: string) => string;
/** A JSON number (null for what JSON cannot hold, as JSON.stringify writes it). */
export const num = (value: number): string => (Number.isFinite(value) ? String(value) : 'null');
/** A nullable member. */
export const orNull = <V>(value: V | null, write: (v: V) => string): string => (value === null ? 'null' : write(value));

const EMPTY_MEMBERS = '"hydra:member":[]';

/** An array result is every item on one page, as the Resource's list writes it. */
function pageOf<T>(result: Page<T> | readonly T[]): Page<T> {
  return Array.isArray(result)
    ? { items: result, page: 1, limit: Math.max(1, result.length), total: result.length }
    : (result as Page<T>);
}

function itemsOf<T>(page: Page<T>): readonly T[] {
  if (!Array.isArray(page.items)) throw new Error('a list written as text needs its items');
  return page.items;
}

/** A node of the list: `@id`, `@type`, then the item's fields (api/http/formats/hydra.ts writes it so). */
export function memberText<T, S extends z.ZodType>(view: HydraView<T, S>, fields: FieldsText<T>, item: T): string {
  return memberWriter(view, fields)(item);
}

/** memberText for one view, its `@type` member written once. */
function memberWriter<T, S extends z.ZodType>(view: HydraView<T, S>, fields: FieldsText<T>): (item: T) => string {
  const type = `,"@type":${JSON.stringify(view.type)}`;
  return (item) => {
    const own = fields(item);
    const head = `{"@id":${JSON.stringify(itemIri(view, item))}${type}`;
    return own === '{}' ? `${head}}` : `${head},${own.slice(1)}`;
  };
}

/** Paths whose `hydra:search` text a list keeps (a list with filters has one path). */
const KEPT_SEARCHES = 16;

/**
 * The representations of a Hydra list (`filters`: its query schema's keys, as the Resource gives
 * them to the format): JSON-LD with the envelope, and API Platform's plain JSON array.
 */
export function listText<T, S extends z.ZodType>(
  app: Pick<AppContext, 'config'>,
  view: HydraView<T, S>,
  filters: readonly string[],
  fields: FieldsText<T>,
) {
  // The envelope without its last member, `hydra:search`, written here from the format's own template.
  const serializer = hydraSerializer(view);
  const member = memberWriter(view, fields);
  const searches = new Map<string, string>();
  const searchText = (path: string, pageParam: string | undefined): string => {
    const variables = listFilters(filters, pageParam);
    if (variables.length === 0) return '';
    const key = `${pageParam ?? ''} ${path}`;
    let text = searches.get(key);
    if (text === undefined) {
      text = `,"hydra:search":${JSON.stringify(searchTemplate({ path }, variables))}`;
      if (searches.size >= KEPT_SEARCHES) searches.delete(searches.keys().next().value as string);
      searches.set(key, text);
    }
    return text;
  };
  return {
    'application/ld+json': (result: Page<T> | readonly T[], ctx: Context): string => {
      const page = pageOf(result);
      const members = itemsOf(page).map(member);
      const req: RequestView = {
        baseUrl: app.config.PUBLIC_URL,
        path: ctx.path,
        querystring: ctx.querystring,
        query: ctx.query as RequestView['query'],
      };
      const envelope = JSON.stringify(serializer.collection({ ...page, items: [] }, req));
      const at = envelope.indexOf(EMPTY_MEMBERS);
      return `${envelope.slice(0, at)}"hydra:member":[${members.join(',')}]${envelope.slice(at + EMPTY_MEMBERS.length, -1)}${searchText(req.path, page.pageParam)}}`;
    },
    'application/json': (result: Page<T> | readonly T[]): string =>
      `[${itemsOf(pageOf(result)).map(fields).join(',')}]`,
  };
}
