import type { z } from 'zod';
import type { HttpMethod } from '../openapi.ts';
import { iriRoot } from './hydra.ts';

/** What an operation does to its class, as the Hydra documentation describes it. */
export type HydraOperationKind = 'list' | 'get' | 'create' | 'update' | 'remove' | 'action';

export interface HydraOperation {
  kind: HydraOperationKind;
  method: HttpMethod;
  /** Full Koa path, prefix included (`/v2/activities/:id`). */
  path: string;
  summary: string;
  description?: string;
  /** The request body's schema (create, update, action). */
  body?: z.ZodType;
  /** The items of a list when they differ from the class's item schema (e.g. without heavy members). */
  item?: z.ZodType;
}

/** One JSON-LD `@type` the API serves, with every operation declared on it. */
export interface HydraClass {
  type: string;
  /** IRI path of its items (`/v2/activities`), which gives the service prefix. */
  path: string;
  /** Item schemas of the declarations of this type (usually one). */
  items: z.ZodType[];
  operations: HydraOperation[];
}

/**
 * The Hydra classes of the API, filled by each `Resource` of format `hydra` as it is declared:
 * the API documentation, the JSON-LD contexts and the entrypoint are generated from it, so a new
 * resource appears in all three without being listed anywhere.
 */
export class HydraRegistry {
  readonly #classes = new Map<string, HydraClass>();
  #version = 0;

  /** Declares a type (a second declaration of the same type adds its item schema and operations). */
  declare(type: string, path: string, item: z.ZodType): void {
    const existing = this.#classes.get(type);
    if (existing) {
      if (!existing.items.includes(item)) existing.items.push(item);
    } else this.#classes.set(type, { type, path, items: [item], operations: [] });
    this.#version++;
  }

  operation(type: string, operation: HydraOperation): void {
    const cls = this.#classes.get(type);
    if (!cls) throw new Error(`Hydra class ${type} is not declared`);
    cls.operations.push(operation);
    this.#version++;
  }

  /** Changes with every declaration, so documents built from the registry know when to rebuild. */
  get version(): number {
    return this.#version;
  }

  /** The classes served under a prefix (`/v2`), in declaration order. */
  classes(prefix: string): HydraClass[] {
    return [...this.#classes.values()].filter((c) => iriRoot(c.path) === prefix);
  }
}
