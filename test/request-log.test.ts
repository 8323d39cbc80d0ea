import test from 'ava';
import { redactUrl } from '../api/http/request-log.ts';
import { startApi } from '../api/server.ts';
import { createLogger } from '../shared/observability/logger.ts';
import { testConfig } from './helpers/app.ts';
import { createTestDatabase } from './helpers/db.ts';
import { logSink } from './helpers/log-lines.ts';

test('tokens in query strings are redacted', (t) => {
  t.is(redactUrl('/api/me?access_token=abc.def&x=1'), '/api/me?access_token=[redacted]&x=1');
  t.is(
    redactUrl('/oauth/accessToken?client_id=a&client_secret=s&code=c'),
    '/oauth/accessToken?client_id=a&client_secret=[redacted]&code=[redacted]',
  );
});

test('request logs carry the request id and never the Authorization header or API key', async (t) => {
  const { stream: sink, lines } = logSink();
  const database = await createTestDatabase();
  const config = testConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'info' });
  const api = await startApi(config, { logger: createLogger('info', 'api', sink) });
  t.teardown(async () => {
    await api.close();
    await database.drop();
  });
  await fetch(`${api.url}/health?access_token=secret-token`, {
    headers: { authorization: 'Bearer secret-jwt', 'x-api-key': 'secret-key', 'x-request-id': 'req-42' },
  });
  const entry = lines.find((l) => l.reqId === 'req-42');
  t.truthy(entry, JSON.stringify(lines));
  const text = JSON.stringify(entry);
  t.false(text.includes('secret'), text);
  t.regex(text, /"authorization":"\[redacted\]"/);
  t.regex(text, /"statusCode":200/);
});
