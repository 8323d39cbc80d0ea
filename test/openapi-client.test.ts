import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import test from 'ava';
import { startTrackingApi } from './helpers/tracking.ts';

// The integrator's path, as docs/examples/generated-client/ documents it: types generated from
// the live /openapi.json with openapi-typescript, the client compiled with `strict`, then run
// against the API through openapi-fetch. No type is written by hand.

const run = promisify(execFile);
const ROOT = path.join(import.meta.dirname, '..');
const EXAMPLE = path.join(ROOT, 'docs/examples/generated-client');
const bin = (name: string) => path.join(ROOT, 'node_modules/.bin', name);

const api = await startTrackingApi();
test.after.always(() => api.close());

test('every operation has a unique operationId; the security schemes are the real ones', async (t) => {
  const doc = (await (await api.fetch('/openapi.json')).json()) as {
    paths: Record<
      string,
      Record<
        string,
        { operationId?: string; parameters?: { in: string; name: string }[]; security?: Record<string, []>[] }
      >
    >;
    components: { securitySchemes: Record<string, { type: string; openIdConnectUrl?: string }> };
  };
  const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
  t.true(ids.length > 100);
  t.false(ids.includes(undefined));
  t.is(new Set(ids).size, ids.length);
  t.is(doc.paths['/v2/activities/{id}']?.get?.operationId, 'getV2ActivitiesById');
  t.is(doc.paths['/v2/activities/{id}.gpx']?.get?.operationId, 'getV2ActivitiesByIdGpx');
  const schemes = doc.components.securitySchemes;
  t.deepEqual(Object.keys(schemes).sort(), ['apiKey', 'basic', 'bearer', 'openIdConnect']);
  t.is(schemes.openIdConnect?.openIdConnectUrl, `${api.config.PUBLIC_URL}/.well-known/openid-configuration`);
  t.deepEqual(doc.paths['/api/v1/clients/{client_id}/api-keys']?.post?.security, [{ basic: [] }]);
  t.deepEqual(doc.paths['/v2/activities']?.post?.security, [{ bearer: [], apiKey: [] }]);
  // Accept-Language is declared where it changes the answer.
  const headers = (p: string, m: string) =>
    (doc.paths[p]?.[m]?.parameters ?? []).filter((x) => x.in === 'header').map((x) => x.name);
  t.deepEqual(headers('/sports', 'get'), ['accept-language']);
  t.deepEqual(headers('/api/v1/places/{place_id}', 'get'), ['accept-language']);
  t.deepEqual(headers('/v2/activities', 'get'), []);
  // The login's own endpoints are listed, PKCE and nonce on the authorization request.
  for (const p of ['/authorize', '/token', '/oauth/revoke', '/jwks', '/.well-known/openid-configuration'])
    t.truthy(doc.paths[p], p);
  const authorize = (doc.paths['/authorize']?.get?.parameters ?? []).map((x) => x.name);
  for (const name of ['code_challenge', 'code_challenge_method', 'nonce', 'state', 'redirect_uri'])
    t.true(authorize.includes(name), name);
});

test('a declared header is validated: an Accept-Language over 500 characters is a 400 naming it', async (t) => {
  const res = await api.fetch('/api/v1/places/00000000-0000-0000-0000-000000000000', {
    headers: { 'accept-language': `fr,${'x'.repeat(600)}` },
  });
  t.is(res.status, 400);
  t.regex(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  t.is(((await res.json()) as { errors: { path: string }[] }).errors[0]?.path, 'headers.accept-language');
});

test('every JSON request body and answer has an example, and each example is valid against its schema', async (t) => {
  type Media = { schema?: object; example?: unknown };
  type Operation = {
    requestBody?: { content?: Record<string, Media> };
    responses?: Record<string, { content?: Record<string, Media> }>;
  };
  const doc = (await (await api.fetch('/openapi.json')).json()) as {
    paths: Record<string, Record<string, Operation>>;
    components: object;
  };
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addFormat('iri-reference', true);
  const problems: string[] = [];
  let checked = 0;
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item)) {
      const media = [
        ...Object.entries(op.requestBody?.content ?? {}).map(([type, m]) => ['request', type, m] as const),
        ...Object.entries(op.responses ?? {}).flatMap(([status, r]) =>
          Object.entries(r.content ?? {}).map(([type, m]) => [status, type, m] as const),
        ),
      ];
      for (const [where, type, m] of media) {
        if (!/json/.test(type) || !m.schema) continue;
        const name = `${method.toUpperCase()} ${path} ${where} ${type}`;
        if (!('example' in m)) {
          problems.push(`${name}: no example`);
          continue;
        }
        checked++;
        // The schema's $refs point into the document's components.
        const validate = ajv.compile({ ...m.schema, components: doc.components });
        if (!validate(m.example)) problems.push(`${name}: ${ajv.errorsText(validate.errors)}`);
      }
    }
  t.true(checked > 100, String(checked));
  t.deepEqual(problems, []);
});

test('a client generated from /openapi.json compiles strictly with the shipped tsconfig.json, types lists directly and calls the API', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'sb-client-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // The example's own files, tsconfig.json and package.json included: what the docs ship is what compiles.
  for (const file of ['generate.ts', 'client.ts', 'tsconfig.json', 'package.json'])
    await copyFile(path.join(EXAMPLE, file), path.join(dir, file));
  await symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  const node = (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, args, { cwd: dir, env: { ...process.env, ...env }, timeout: 60_000 });
  await node(['generate.ts', `${api.url}/openapi.json`, 'schema.ts']);
  // Strict, with the generated types as the only types of the API.
  await t.notThrowsAsync(run(bin('tsc'), ['-p', dir], { cwd: dir, timeout: 120_000 }));

  const user = await api.user();
  const { stdout } = await node(['client.ts'], {
    BASE_URL: api.url,
    TOKEN: user.token,
    KEY: api.apiKey,
    USER_IRI: `/v2/users/${user.ldid}`,
    GPX_FILE: path.join(ROOT, 'test/fixtures/tracking/apps/strava-like-run.gpx'),
  });
  const out = JSON.parse(stdout) as Record<string, Record<string, unknown>>;
  t.like(out.places, { status: 200 });
  t.is(typeof out.places?.count, 'number');
  t.like(out.sports, { status: 200 });
  t.like(out.created, { status: 201, name: 'Morning run' });
  t.like(out.read, { status: 200, name: 'Morning run', duration: 3 });
  t.like(out.imported, { status: 201, name: 'Imported run' });
  t.like(out.gpx, { status: 200, starts: '<?xml' });
  // The /v2 client reads a list's hydra:member and hydra:totalItems with no narrowing (compiled above).
  t.like(out.list, { status: 200, total: 2 });
  t.deepEqual([...((out.list?.names as string[]) ?? [])].sort(), ['Imported run', 'Morning run']);
});
