import { parse as parseJson } from '@hapi/bourne';
import { BodySyntaxError } from './errors.ts';

/** UTF-8 as a JSON body is read: a leading BOM dropped, invalid bytes replaced. */
export const decodeUtf8 = (bytes: Uint8Array) =>
  new TextDecoder('utf-8', { fatal: false, ignoreBOM: false }).decode(bytes);

/**
 * A JSON request body: undefined when it is empty (validation then says it is missing), an object
 * or an array otherwise. Anything else, and a `__proto__` member (prototype poisoning), is a
 * BodySyntaxError.
 */
export function parseJsonText(text: string): unknown {
  if (text.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = parseJson(text, { protoAction: 'error' });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new BodySyntaxError(message, /forbidden prototype property/.test(message));
  }
  if (typeof parsed !== 'object' || parsed === null)
    throw new BodySyntaxError('invalid JSON, only supports object and array');
  return parsed;
}
