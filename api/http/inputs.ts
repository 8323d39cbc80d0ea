import type { Context } from 'koa';
import { z } from 'zod';
import { decodeUtf8, parseJsonText } from '../../shared/json-text.ts';
import { type FieldError, type HttpError, unprocessable, unsupportedMediaType } from './errors.ts';
import { hostileInput, jsonProblems, textProblem } from './input-guard.ts';
import { receiveFile, type UploadedFile, uploadedFile } from './multipart-file.ts';
import { readRawBody } from './raw-body.ts';
import { parseInput } from './validate.ts';

/**
 * The bodies an operation takes, declared with it (api/http/route.ts reads them): per media type
 * a reader, a limit and what /openapi.json shows. The request's Content-Type picks the input; the
 * handler gets what that input read, tagged by its `kind`.
 */
export interface BodyInput<T> {
  /** Media types, or ranges such as `application/*+json`, this input reads. */
  readonly types: readonly string[];
  /** Whether a request without a body is this input's (the JSON input then says the body is missing). */
  readonly readsNoBody?: boolean;
  /** The request body per media type, as /openapi.json documents it. */
  readonly documented: Readonly<Record<string, z.ZodType>>;
  /** The JSON body's schema, for the Hydra documentation of the operation. */
  readonly schema?: z.ZodType;
  /** Reads, checks and validates the body; `defaultLimitBytes` is the router's BODY_LIMIT. */
  read(ctx: Context, defaultLimitBytes: number): Promise<T>;
}

export interface BodyInputs<T> {
  readonly inputs: readonly BodyInput<T>[];
  /** The 415's detail when no input reads the request's Content-Type. */
  readonly unsupported: string;
}

/** What a handler gets as its body: a schema's output, or the value of the input that read it. */
export type BodyOf<B> = B extends BodyInputs<infer T> ? T : B extends z.ZodType ? z.output<B> : never;

type ValueOf<I> = I extends BodyInput<infer T> ? T : never;

/** An operation's inputs, the first one documented first. */
export function bodyInputs<I extends readonly BodyInput<object>[]>(
  unsupported: string,
  ...inputs: I
): BodyInputs<ValueOf<I[number]>> {
  return { inputs: inputs as unknown as readonly BodyInput<ValueOf<I[number]>>[], unsupported };
}

/** The schema of an operation's JSON input, if it has one (the Hydra documentation shows it). */
export const jsonSchemaOf = (body: BodyInputs<unknown>): z.ZodType | undefined =>
  body.inputs.find((i) => i.schema)?.schema;

export const isBodyInputs = (body: unknown): body is BodyInputs<unknown> =>
  typeof body === 'object' && body !== null && 'inputs' in body && Array.isArray(body.inputs);

/** Whether the request has a body at all (RFC 9112: a length, or a chunked transfer). */
const hasBody = (ctx: Context) => ctx.get('transfer-encoding') !== '' || (ctx.request.length ?? 0) > 0;

/**
 * The value of the input that reads this request: a request without a body goes to the input
 * that reads none (else 415), any other to the input whose types match its Content-Type.
 */
export async function readBody<T>(ctx: Context, body: BodyInputs<T>, defaultLimitBytes: number): Promise<T> {
  const input = hasBody(ctx)
    ? body.inputs.find((i) => ctx.is(i.types as string[]) !== false)
    : body.inputs.find((i) => i.readsNoBody);
  if (!input) throw unsupportedMediaType(body.unsupported);
  return input.read(ctx, defaultLimitBytes);
}

// ---------------------------------------------------------------- JSON

const JSON_TYPES = ['application/json', 'application/*+json'];

export interface JsonInputOptions<X extends object> {
  /** Most bytes after decompression (the router's BODY_LIMIT by default); 413 above. */
  limitBytes?: number;
  /** The 413 above the limit, when it should name its own setting. */
  tooLarge?: () => HttpError;
  /**
   * Reads the bytes another way than JSON.parse (an activity's streams, off the event loop): the
   * `document` is checked and validated, `extra` is handed to the handler beside it.
   */
  parse?: (bytes: Buffer) => Promise<{ document: unknown; extra: X }>;
}

/**
 * A JSON body in any JSON media type (gzip, deflate and br accepted): text no field may hold,
 * non-finite numbers and over-deep nesting are a 400 naming each problem, then the schema
 * validates it (422).
 */
export function jsonInput<S extends z.ZodType, X extends object = Record<never, never>>(
  schema: S,
  options: JsonInputOptions<X> = {},
): BodyInput<{ kind: 'json'; value: z.output<S> } & X> {
  return {
    types: JSON_TYPES,
    readsNoBody: true,
    documented: { 'application/json': schema },
    schema,
    async read(ctx, defaultLimitBytes) {
      const limit = options.limitBytes ?? defaultLimitBytes;
      const bytes = hasBody(ctx)
        ? await readRawBody(ctx, {
            limit,
            decompress: true,
            ...(options.tooLarge ? { tooLarge: options.tooLarge } : {}),
          })
        : Buffer.alloc(0);
      const { document, extra } = options.parse
        ? await options.parse(bytes)
        : { document: parseJsonText(decodeUtf8(bytes)), extra: {} as X };
      const problems = document === undefined ? [] : jsonProblems(document);
      if (problems.length) throw hostileInput(problems);
      return { kind: 'json' as const, value: parseInput(schema, document, 'body'), ...extra };
    },
  };
}

// ---------------------------------------------------------------- a raw file

export interface FileInputOptions {
  types: readonly string[];
  limitBytes: number;
  tooLarge?: () => HttpError;
  description: string;
}

/** A file sent as the whole body, in one of `types` (identity encoding), at most `limitBytes`. */
export function fileInput(options: FileInputOptions): BodyInput<{ kind: 'file'; bytes: Buffer; contentType: string }> {
  const schema = z.string().meta({ format: 'binary', description: options.description });
  return {
    types: options.types,
    documented: Object.fromEntries(options.types.map((type) => [type, schema])),
    async read(ctx) {
      const bytes = await readRawBody(ctx, {
        limit: options.limitBytes,
        ...(options.tooLarge ? { tooLarge: options.tooLarge } : {}),
      });
      if (bytes.length === 0) throw unprocessable([{ path: 'body', message: 'the file is empty' }], 'No file was sent');
      return { kind: 'file' as const, bytes, contentType: ctx.get('content-type') };
    },
  };
}

// ---------------------------------------------------------------- multipart/form-data

export interface MultipartInputOptions<F extends z.ZodObject | undefined> {
  /** The names the one file part may have; the first is documented. */
  fileFields: readonly string[];
  /** The text fields beside the file; any other is a 422 naming it. Without it, none is taken. */
  fields?: F;
  limitBytes: number;
  /** The status of a missing or empty file (the tracking upload's reference answers 400). */
  missingStatus?: 400 | 422;
  fileDescription: string;
}

type FieldsOf<F> = F extends z.ZodObject ? z.output<F> : Record<never, never>;

/** Form fields hold text the input guard never saw: the same refusals as in JSON. */
function formTextProblems(form: Record<string, unknown>): FieldError[] {
  const errors: FieldError[] = [];
  for (const [name, value] of Object.entries(form))
    for (const text of [name, ...(Array.isArray(value) ? value : [value])].filter((v) => typeof v === 'string')) {
      const problem = textProblem(text);
      if (problem) errors.push({ path: `body.${textProblem(name) ? 'field' : name}`, message: problem });
    }
  return errors;
}

/** multipart/form-data with exactly one file part (read within the limit) and the declared text fields. */
export function multipartInput<F extends z.ZodObject | undefined = undefined>(
  options: MultipartInputOptions<F>,
): BodyInput<{ kind: 'multipart'; file: UploadedFile; fields: FieldsOf<F> }> {
  const file = z.string().meta({ format: 'binary', description: options.fileDescription });
  const shape = options.fields ? options.fields.shape : {};
  const names = Object.keys(shape);
  const receive = receiveFile(options.limitBytes);
  return {
    types: ['multipart/form-data'],
    documented: { 'multipart/form-data': z.object({ [options.fileFields[0] ?? 'file']: file, ...shape }) },
    async read(ctx) {
      await receive(ctx, async () => {});
      const uploaded = uploadedFile(ctx, {
        fields: options.fileFields,
        ...(options.missingStatus ? { missingStatus: options.missingStatus } : {}),
      });
      const form = ((ctx.request as { body?: unknown }).body ?? {}) as Record<string, unknown>;
      const hostile = formTextProblems(form);
      if (hostile.length) throw hostileInput(hostile);
      const unknown = Object.keys(form).filter((name) => !names.includes(name));
      if (unknown.length)
        throw unprocessable(
          unknown.map((name) => ({
            path: `body.${name}`,
            message: `no such field (fields: ${[options.fileFields[0], ...names].join(', ')})`,
          })),
        );
      const fields = (options.fields ? parseInput(options.fields, form, 'body') : {}) as FieldsOf<F>;
      return { kind: 'multipart' as const, file: uploaded, fields };
    },
  };
}
