import { parse as parseJson } from '@hapi/bourne';
import { BodySyntaxError, type DomainError, invalid } from '../../errors.ts';
import { datastreamFromJson, trackFromJson } from '../activities/content.ts';
import type { ActivityBody } from './activity-body.ts';
import { scanActivityBody } from './scan.ts';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const STREAM_MESSAGE = 'must be an object keyed by elapsed seconds';

/**
 * Parses the body and turns its streams into columns: straight from the bytes when they are as
 * recorders write them (scan.ts), else through JSON.parse. Throws BodySyntaxError
 * for bytes that are not a JSON object or array (or that have a `__proto__` member), and the
 * DomainError of activities/content.ts, naming each bad sample, for streams that break a rule.
 */
export function parseActivityBody(bytes: Uint8Array): ActivityBody {
  return scanActivityBody(bytes, decodeText) ?? parseGeneric(bytes);
}

/** UTF-8 as the JSON body parser reads it: a leading BOM dropped, invalid bytes replaced. */
const decodeText = (bytes: Uint8Array) => new TextDecoder('utf-8', { fatal: false, ignoreBOM: false }).decode(bytes);

/** JSON.parse, then the streams' rules of activities/content.ts: any body, every problem named. */
function parseGeneric(bytes: Uint8Array): ActivityBody {
  const text = decodeText(bytes);
  if (text.trim() === '') return { body: undefined, datastream: datastreamFromJson(null), track: trackFromJson(null) };
  let parsed: unknown;
  try {
    parsed = parseJson(text, { protoAction: 'error' });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new BodySyntaxError(message, /forbidden prototype property/.test(message));
  }
  if (typeof parsed !== 'object' || parsed === null)
    throw new BodySyntaxError('invalid JSON, only supports object and array');
  if (!isObject(parsed)) return { body: parsed, datastream: datastreamFromJson(null), track: trackFromJson(null) };
  const { datastream, locations, ...body } = parsed;
  const problems = [
    ...(datastream != null && !isObject(datastream) ? [{ path: 'body.datastream', message: STREAM_MESSAGE }] : []),
    ...(locations != null && !isObject(locations) ? [{ path: 'body.locations', message: STREAM_MESSAGE }] : []),
  ];
  if (problems.length) throw invalid(problems);
  return {
    body,
    datastream: datastreamFromJson(datastream as Record<string, unknown> | null | undefined),
    track: trackFromJson(locations as Record<string, unknown> | null | undefined),
  };
}

/** What crosses from an import thread back to the API when parseActivityBody refused the body. */
export type ActivityBodyRefusal =
  | { syntax: string; prototypeMember: boolean }
  | { invalid: DomainError['errors']; message: string };
