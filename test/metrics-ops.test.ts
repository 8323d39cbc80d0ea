import test from 'ava';
import { freePort, startTestApi } from './helpers/app.ts';

// Issue 36 §4: the series the API alerts read (ops/prometheus/alerts.yml, group
// sports-backend-api) beyond the job pipeline: readiness, rate limiter failures, Redis memory.

/** The value of one series of a scrape, or undefined. */
const seriesValue = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

test('a healthy API: ready, both dependencies up, Redis memory per node, no rate limiter failure', async (t) => {
  const api = await startTestApi(t);
  const text = await (await api.fetch('/metrics')).text();
  t.is(seriesValue(text, 'api_ready'), 1);
  t.is(seriesValue(text, 'api_dependency_up{dependency="postgres"}'), 1);
  t.is(seriesValue(text, 'api_dependency_up{dependency="redis"}'), 1);
  const node = new URL(api.config.REDIS_URL).host;
  t.true((seriesValue(text, `redis_memory_used_bytes{node="${node}"}`) ?? 0) > 0, text);
  t.true((seriesValue(text, `redis_memory_max_bytes{node="${node}"}`) ?? -1) >= 0);
  t.not(seriesValue(text, 'rate_limiter_errors_total{limiter="api"}'), undefined);
});

test('Redis unreachable: the request goes through, the rate limiter failure is counted, api_ready is 0', async (t) => {
  const api = await startTestApi(t, { env: { REDIS_URL: `redis://127.0.0.1:${await freePort()}` } });
  const errors = async () =>
    seriesValue(await (await api.fetch('/metrics')).text(), 'rate_limiter_errors_total{limiter="api"}') ?? Number.NaN;
  const before = await errors();
  t.is((await api.fetch('/api/v1/sports')).status, 200, 'losing rate limits beats losing the API');
  t.is(await errors(), before + 1);
  const text = await (await api.fetch('/metrics')).text();
  t.is(seriesValue(text, 'api_ready'), 0);
  t.is(seriesValue(text, 'api_dependency_up{dependency="redis"}'), 0);
  t.is(seriesValue(text, 'api_dependency_up{dependency="postgres"}'), 1);
  t.false(text.includes('redis_memory_used_bytes{'), 'no made-up memory figure');
});
