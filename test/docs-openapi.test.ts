import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import test from 'ava';
import { docPathUses, type OpenApiPaths, pathProblems } from './helpers/doc-paths.ts';
import { startTrackingApi } from './helpers/tracking.ts';

// What the docs show must be what /openapi.json describes: a typed call copied from the docs
// must compile against the generated client (docs/generated-clients.md).

const ROOT = path.join(import.meta.dirname, '..');
const api = await startTrackingApi();
test.after.always(() => api.close());

type Media = { schema?: object };
type Operation = {
  tags?: string[];
  parameters?: { in: string; name: string; schema?: { anyOf?: { enum?: string[]; items?: { enum?: string[] } }[] } }[];
  requestBody?: { required?: boolean; content?: Record<string, Media> };
  responses?: Record<string, { content?: Record<string, Media> }>;
};
type Document = { paths: Record<string, Record<string, Operation>>; components: object };

const openapi = async () => (await (await api.fetch('/openapi.json')).json()) as Document;

async function docFiles(): Promise<{ name: string; text: string }[]> {
  const names = ['README.md', ...(await readdir(path.join(ROOT, 'docs'))).map((f) => `docs/${f}`)];
  return Promise.all(
    names
      .filter((n) => n.endsWith('.md'))
      .map(async (name) => ({ name, text: await readFile(path.join(ROOT, name), 'utf8') })),
  );
}

test('every path the docs name (prose, curl and client examples) is in /openapi.json with the same parameter names', async (t) => {
  const doc = await openapi();
  const uses = (await docFiles()).flatMap(({ name, text }) => docPathUses(name, text));
  t.true(uses.length > 200, String(uses.length));
  t.deepEqual(pathProblems(doc, uses), []);
});

test('the check reports a renamed parameter, an unknown path, method or query parameter, and skips a path said absent', (t) => {
  const doc: OpenApiPaths = {
    paths: {
      '/v2/share_activities/{id}': { get: { parameters: [{ in: 'path', name: 'id' }] } },
      '/v2/activities': { get: { parameters: [{ in: 'query', name: 'limit' }] } },
      '/media/{path}': { get: {} },
    },
  };
  const text = [
    'Read it: `GET /v2/share_activities/{token}`; there is no `DELETE /v2/users/{id}`.',
    '`DELETE /v2/activities` and `GET /v2/nothing`; files at `GET /media/<path>`.',
    '```sh',
    'curl -s "$BASE/v2/activities?limit=5&nope=1"',
    'curl -s $BASE/media/uploads/ab/cd.jpg',
    'curl -s -X POST $BASE/v2/share_activities/$SHARE \\',
    "  -d '{}'",
    '```',
  ].join('\n');
  t.deepEqual(pathProblems(doc, docPathUses('x.md', text)), [
    'x.md:1 GET /v2/share_activities/{token}: /openapi.json names it /v2/share_activities/{id}',
    'x.md:2 DELETE /v2/activities: /openapi.json has no DELETE on /v2/activities',
    'x.md:2 GET /v2/nothing: no such path in /openapi.json',
    'x.md:4 GET /v2/activities: query parameter nope is not in /openapi.json',
    'x.md:6 POST /v2/share_activities/*: /openapi.json has no POST on /v2/share_activities/{id}',
  ]);
});

test('the mismatches an integrator met are gone from /openapi.json', async (t) => {
  const doc = await openapi();
  t.truthy(doc.paths['/v2/share_activities/{id}']?.get);
  // The body of the personal data export may be absent (it then exports GPX).
  t.is(doc.paths['/v2/users/{id}/export_personal_data']?.post?.requestBody?.required, false);
  t.is(doc.paths['/v2/activities']?.post?.requestBody?.required, true);
  const type = doc.paths['/v2/user_sumups']?.get?.parameters?.find((p) => p.name === 'type');
  t.deepEqual(type?.schema?.anyOf?.[0]?.enum, ['week', 'month', 'year']);
  t.deepEqual(type?.schema?.anyOf?.[1]?.items?.enum, ['week', 'month', 'year']);
  const authorize = (doc.paths['/oauth/authorize']?.get?.parameters ?? []).map((p) => p.name);
  for (const name of ['code_challenge', 'code_challenge_method', 'nonce']) t.true(authorize.includes(name), name);
});

test('every error the accounts JSON routes answer is described, as the problem document they send', async (t) => {
  const doc = await openapi();
  const bare: string[] = [];
  for (const [p, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item))
      for (const [status, r] of Object.entries(op.responses ?? {}))
        if (op.tags?.includes('accounts') && Number(status) >= 400 && !r.content) bare.push(`${method} ${p} ${status}`);
  t.deepEqual(bare, []);

  // POST /api/v1/clients: its 403 and 422 bodies are valid against what /openapi.json says.
  const ajv = new Ajv2020({ strict: false });
  const responses = doc.paths['/api/v1/clients']?.post?.responses ?? {};
  const register = (body: object) =>
    api.fetch('/api/v1/clients', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const cases = [
    ['422', await register({ client_name: '', redirect_uris: ['ftp://x'] })],
    ['403', await register({ client_name: 'App', redirect_uris: ['https://app.example/cb'], first_party: true })],
  ] as const;
  for (const [status, res] of cases) {
    t.is(String(res.status), status);
    t.regex(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    const schema = responses[status]?.content?.['application/problem+json']?.schema;
    t.truthy(schema, status);
    const body = (await res.json()) as { errors: unknown[] };
    const validate = ajv.compile({ ...schema, components: doc.components });
    t.true(validate(body), `${status}: ${ajv.errorsText(validate.errors)}`);
    t.true(Array.isArray(body.errors));
  }
});
