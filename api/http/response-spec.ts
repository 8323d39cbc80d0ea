import type { z } from 'zod';

/** A documented response of an operation: what /openapi.json shows for one status. */
export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  contentType?: string;
  /** The same response in other media types a client may ask for in `Accept` (schema when it is JSON). */
  alternates?: Record<string, z.ZodType | undefined>;
  /** Response headers to document (`Idempotent-Replayed`). */
  headers?: z.ZodObject;
}
