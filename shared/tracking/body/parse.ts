import { type DomainError, invalid } from '../../errors.ts';
import { decodeUtf8, parseJsonText } from '../../json-text.ts';
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
  return scanActivityBody(bytes, decodeUtf8) ?? parseGeneric(bytes);
}

/** JSON.parse, then the streams' rules of activities/content.ts: any body, every problem named. */
function parseGeneric(bytes: Uint8Array): ActivityBody {
  const parsed = parseJsonText(decodeUtf8(bytes));
  if (parsed === undefined)
    return { body: undefined, datastream: datastreamFromJson(null), track: trackFromJson(null) };
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
