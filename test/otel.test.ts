import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { issueApiKey } from '../shared/accounts/api-keys.ts';
import { DATATYPE } from '../shared/tracking/activities/data.ts';
import { freePort, testConfig, uniquePrefix } from './helpers/app.ts';
import { createTestDatabase } from './helpers/db.ts';
import { parseLogLines } from './helpers/log-lines.ts';
import { createTestAccount, mintToken, testClientId } from './helpers/tokens.ts';

const database = await createTestDatabase();
test.after.always(() => database.drop());

const PROBE = ['--import', './test/helpers/loaded-modules.ts'];

interface Spawned {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function spawnEntry(entry: string, env: Record<string, string>): Spawned {
  const child = spawn(process.execPath, [...PROBE, entry], {
    env: { ...process.env, LOG_LEVEL: 'info', MIGRATE_ON_START: 'false', SEED_ON_START: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function waitFor(what: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (!what() && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
  return what();
}

/** The @opentelemetry modules the process resolved, with who asked (printed by the probe as it exits). */
function otelModules(output: string): { url: string; parent: string }[] {
  const line = output.split('\n').find((l) => l.startsWith('OTEL_MODULES '));
  if (!line) throw new Error(`no probe line in:\n${output.slice(-3_000)}`);
  return JSON.parse(line.slice('OTEL_MODULES '.length));
}

/** An OTLP/HTTP receiver on loopback: keeps every span (JSON encoding, the HTTP exporter's). */
async function otlpReceiver() {
  const spans: {
    traceId: string;
    spanId: string;
    parentSpanId: string;
    name: string;
    kind: number;
    service: string;
  }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as {
          resourceSpans: {
            resource: { attributes: { key: string; value: { stringValue?: string } }[] };
            scopeSpans: {
              spans: { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number }[];
            }[];
          }[];
        };
        for (const rs of body.resourceSpans) {
          const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
          for (const ss of rs.scopeSpans)
            for (const s of ss.spans)
              spans.push({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? '',
                name: s.name,
                kind: s.kind,
                service,
              });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, close: () => server.close() };
}

test('without OTEL_EXPORTER_OTLP_ENDPOINT the API loads nothing of OpenTelemetry but the no-op API prom-client uses', async (t) => {
  const port = await freePort();
  const api = spawnEntry('api/main.ts', {
    // Empty counts as unset, as in the SDK.
    OTEL_EXPORTER_OTLP_ENDPOINT: '',
    DATABASE_URL: database.url,
    QUEUE_PREFIX: uniquePrefix(),
    PORT: String(port),
    HOST: '127.0.0.1',
  });
  t.teardown(() => api.child.kill('SIGKILL'));
  t.true(await waitFor(() => /api listening/.test(api.output()), 120_000), api.output());
  // Requests, so lazily loaded code (routes, pg, Redis) has run too.
  t.is((await fetch(`http://127.0.0.1:${port}/health`)).status, 200);
  await (await fetch(`http://127.0.0.1:${port}/v2/sports`)).text();
  api.child.kill('SIGTERM');
  t.is(await api.exited, 0, api.output());
  const loaded = otelModules(api.output());
  // prom-client (a dependency of long standing) requires @opentelemetry/api for exemplars: the
  // API's no-op facade, which records nothing without an SDK. No SDK, exporter or instrumentation.
  const others = loaded.filter(
    (m) =>
      !m.url.includes('/node_modules/@opentelemetry/api/') ||
      !(m.parent.includes('/node_modules/prom-client/') || m.parent.includes('/node_modules/@opentelemetry/api/')),
  );
  t.deepEqual(others, []);
});

test('with OTEL_EXPORTER_OTLP_ENDPOINT the spans of a POST and of its job share one trace id', async (t) => {
  const receiver = await otlpReceiver();
  t.teardown(receiver.close);
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const config = testConfig({ DATABASE_URL: database.url, PORT: String(port), PUBLIC_URL: publicUrl });
  const env = {
    DATABASE_URL: database.url,
    QUEUE_PREFIX: config.QUEUE_PREFIX,
    STORAGE_DIR: config.STORAGE_DIR,
    PUBLIC_URL: publicUrl,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    // Export within a tenth of a second rather than every 5 s.
    OTEL_BSP_SCHEDULE_DELAY: '100',
  };
  const api = spawnEntry('api/main.ts', { ...env, PORT: String(port), HOST: '127.0.0.1' });
  const worker = spawnEntry('workers/main.ts', { ...env, WORKER_QUEUES: 'records', OUTBOX_POLL_MS: '20' });
  t.teardown(() => {
    api.child.kill('SIGKILL');
    worker.child.kill('SIGKILL');
  });
  t.true(await waitFor(() => /api listening/.test(api.output()), 120_000), api.output());
  t.true(await waitFor(() => /workers started/.test(worker.output()), 120_000), worker.output());

  const account = await createTestAccount(database.db);
  const token = await mintToken(database.db, config, account);
  const { api_key: apiKey } = await issueApiKey(database.db, await testClientId(database.db), 'otel test');
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const res = await fetch(`${publicUrl}/v2/activities`, {
    method: 'POST',
    headers: {
      'content-type': 'application/ld+json',
      authorization: `Bearer ${token}`,
      'x-api-key': apiKey,
      'x-request-id': 'req-otel-1',
      traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
    },
    body: JSON.stringify({
      user: `/v2/users/${account.ldid}`,
      sport: '/v2/sports/121',
      startdate: '2026-03-01T07:00:00+00:00',
      duration: 60,
      dataSummaries: { [DATATYPE.DISTANCE]: 240 },
    }),
  });
  t.is(res.status, 201, await res.text());
  const ofTrace = () => receiver.spans.filter((s) => s.traceId === traceId);
  const arrived = await waitFor(
    () =>
      ofTrace().some((s) => s.service === 'sports-api') &&
      ofTrace().some((s) => s.service === 'sports-worker' && s.name === 'records activity-changed'),
    120_000,
  );
  t.true(arrived, JSON.stringify(receiver.spans.map((s) => [s.service, s.name, s.traceId])));
  const names = (service: string) =>
    new Set(
      ofTrace()
        .filter((s) => s.service === service)
        .map((s) => s.name),
    );
  t.log('api spans', [...names('sports-api')]);
  t.log('worker spans', [...names('sports-worker')]);
  // The request's server span (http) continues the client's trace; its writes to PostgreSQL (pg) too.
  t.true(ofTrace().some((s) => s.service === 'sports-api' && s.parentSpanId === '00f067aa0ba902b7'));
  // The job's span and the queries it makes (pg) are in the same trace.
  t.true(ofTrace().some((s) => s.service === 'sports-worker' && s.name !== 'records activity-changed'));
  // The request's line and its job's carry the trace id and the id of a span of that trace.
  const lines = [...parseLogLines(api.output()), ...parseLogLines(worker.output())].filter(
    (l) => l.reqId === 'req-otel-1',
  );
  t.deepEqual(lines.map((l) => `${l.name}: ${l.msg}`).sort(), ['api: request', 'worker: job done'], api.output());
  const spansOfLines = () => lines.every((l) => ofTrace().some((s) => s.spanId === l.spanId));
  t.true(await waitFor(spansOfLines, 120_000), JSON.stringify({ lines, spans: ofTrace() }));
  t.true(lines.every((l) => l.traceId === traceId));
  // The job's line is written in the job's span.
  const jobSpan = ofTrace().find((s) => s.name === 'records activity-changed');
  t.is(lines.find((l) => l.msg === 'job done')?.spanId, jobSpan?.spanId);

  api.child.kill('SIGTERM');
  worker.child.kill('SIGTERM');
  t.is(await api.exited, 0, api.output());
  t.is(await worker.exited, 0, worker.output());
  t.true(otelModules(api.output()).length > 0, 'the probe sees OpenTelemetry when it is configured');
});

test("`npm start`'s single process (scripts/start.ts) exports its spans too, as sports-backend", async (t) => {
  const receiver = await otlpReceiver();
  t.teardown(receiver.close);
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const config = testConfig({ DATABASE_URL: database.url, PORT: String(port), PUBLIC_URL: publicUrl });
  const system = spawnEntry('scripts/start.ts', {
    DATABASE_URL: database.url,
    QUEUE_PREFIX: config.QUEUE_PREFIX,
    STORAGE_DIR: config.STORAGE_DIR,
    PUBLIC_URL: publicUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  t.teardown(() => system.child.kill('SIGKILL'));
  t.true(await waitFor(() => /"ready"|\bready\b/.test(system.output()), 120_000), system.output());
  t.is((await fetch(`${publicUrl}/health`)).status, 200);
  t.true(
    await waitFor(() => receiver.spans.some((s) => s.service === 'sports-backend'), 120_000),
    JSON.stringify(receiver.spans.map((s) => [s.service, s.name])),
  );
  system.child.kill('SIGTERM');
  t.is(await system.exited, 0, system.output());
});
