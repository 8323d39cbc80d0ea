import type { z } from 'zod';
import { type FieldError, HttpError } from './errors.ts';

export type InputLocation = 'query' | 'params' | 'body' | 'headers';

export function issuesToFieldErrors(location: InputLocation, issues: readonly z.core.$ZodIssue[]): FieldError[] {
  return issues.map((issue) => ({ path: fieldPath(location, issue.path), message: issue.message }));
}

function fieldPath(location: InputLocation, path: readonly PropertyKey[]): string {
  let out: string = location;
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : `.${String(key)}`;
  return out;
}

/**
 * Parses one part of a request with its schema; a failure is a 422 (or `status`, for services
 * whose spec answers search errors otherwise) listing every problem with its path.
 */
export function parseInput<S extends z.ZodType>(
  schema: S,
  value: unknown,
  location: InputLocation,
  status = 422,
): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const errors = issuesToFieldErrors(location, result.error.issues);
  const title = status === 404 ? 'Not Found' : status === 400 ? 'Bad Request' : 'Unprocessable Entity';
  throw new HttpError(status, title, `Invalid ${location === 'params' ? 'path parameter' : location}`, errors);
}
