import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { ALERTS_FILE, metricNames, readAlertRules } from './helpers/alert-rules.ts';

const rulesFile = fileURLToPath(ALERTS_FILE);
const promtool = spawnSync('promtool', ['--version']).status === 0;

test('the alert rules are what the issues ask: the job pipeline, and the API beyond it', (t) => {
  const rules = Object.fromEntries(readAlertRules().map((r) => [r.alert, r.expr]));
  t.deepEqual(Object.keys(rules).sort(), [
    'ApiNotReady',
    'HttpLatencyHigh',
    'HttpServerErrors',
    'JobsFailing',
    'JobsStalled',
    'OutboxFailedRows',
    'OutboxLagHigh',
    'OutboxRelayLagHigh',
    'RateLimiterUnavailable',
    'ReadReplicaLagging',
    'ReadReplicaSkipped',
    'RedisMemoryHigh',
    'TargetDown',
  ]);
  t.regex(rules.JobsFailing ?? '', /delta\(queue_jobs\{state="failed"\}\[10m\]\)\) > 0/);
  t.regex(rules.OutboxLagHigh ?? '', /outbox_lag_seconds\{queue!~"exports\|webhooks"\}\) > 60/);
  t.regex(rules.JobsStalled ?? '', /increase\(jobs_stalled_total\[10m\]\)\) > 0/);
  t.deepEqual(metricNames(rules.OutboxLagHigh ?? ''), ['outbox_lag_seconds']);
  // Issue 36 §4: 5xx rate, p99 per route group, target down or not ready, replica, rate limiter, Redis memory.
  t.regex(rules.HttpServerErrors ?? '', /status=~"5\.\."/);
  t.regex(rules.HttpLatencyHigh ?? '', /histogram_quantile\(0\.99, sum by \(group, le\)/);
  t.deepEqual(metricNames(rules.TargetDown ?? ''), ['up']);
  t.deepEqual(metricNames(rules.RedisMemoryHigh ?? '').sort(), ['redis_memory_max_bytes', 'redis_memory_used_bytes']);
});

test('docs/operations.md says what to do for each alert', (t) => {
  const docs = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
  for (const { alert } of readAlertRules()) t.regex(docs, new RegExp(`^### ${alert}$`, 'm'), alert);
});

test('promtool check rules and the rules unit tests pass (when Debian prometheus is installed)', (t) => {
  if (!promtool) {
    // Without promtool the parse above and the metric names of test/metrics-api.test.ts stand.
    t.log('promtool not found (Debian package prometheus): skipped');
    t.pass();
    return;
  }
  const check = execFileSync('promtool', ['check', 'rules', rulesFile], { encoding: 'utf8' });
  t.regex(check, /SUCCESS: 13 rules found/);
  const unit = spawnSync('promtool', ['test', 'rules', 'alerts.test.yml'], {
    cwd: fileURLToPath(new URL('../ops/prometheus/', import.meta.url)),
    encoding: 'utf8',
  });
  t.is(unit.status, 0, unit.stdout + unit.stderr);
});
