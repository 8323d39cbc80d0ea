import { z } from 'zod';
import { SerializedItems, type Serializer } from './format.ts';

/** Plain JSON: an item as the domain builds it, a list as a bare array. */
export function jsonSerializer(): Serializer {
  return {
    contentType: 'application/json',
    item: (item) => item,
    collection: (page) => (page.items instanceof SerializedItems ? `[${page.items.json}]` : page.items),
    itemSchema: (item) => item,
    collectionSchema: (item) => z.array(item),
  };
}
