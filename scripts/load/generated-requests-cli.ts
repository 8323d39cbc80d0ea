import { parseArgs } from 'node:util';
import { runCli } from '../../shared/runtime/cli.ts';
import { generatedRequestsAgainst } from './generated-requests.ts';

// node --env-file-if-exists=.env scripts/load/generated-requests-cli.ts --base-url http://127.0.0.1:3000 [--count 1000]
// [--seed n] [--concurrency 1] [--hostile]: the generated requests against a running API whose database is
// DATABASE_URL (accounts, a client, an API key and a place are made there). Needs the devDependencies
// (fast-check). Exit code 1 when a check failed. Run the API with RATE_LIMIT_ENABLED=false.

const { values: args } = parseArgs({
  options: {
    'base-url': { type: 'string' },
    count: { type: 'string', default: '1000' },
    seed: { type: 'string' },
    concurrency: { type: 'string', default: '1' },
    hostile: { type: 'boolean', default: false },
  },
});

await runCli(async (config) => {
  const baseUrl = args['base-url'] ?? config.PUBLIC_URL;
  const started = Date.now();
  const result = await generatedRequestsAgainst({
    baseUrl,
    databaseUrl: config.DATABASE_URL,
    count: Number(args.count),
    concurrency: Number(args.concurrency),
    hostile: args.hostile,
    audience: config.AUTH_AUDIENCE,
    ...(args.seed ? { seed: Number(args.seed) } : {}),
  });
  const reports = [
    ...(result.hostile ? [['hostile', result.hostile] as const] : []),
    ['generated', result.generated] as const,
  ];
  for (const [name, report] of reports) {
    console.log(`${name}: ${report.sent} sent, per caller ${JSON.stringify(report.byCredentials)}`);
    console.log(`  statuses per caller: ${JSON.stringify(report.statuses)}`);
    if (report.transport.length) console.log(`  ${report.transport.length} refused by Node's HTTP parser (431)`);
    for (const failure of report.failures) console.log(`  FAIL ${failure}`);
  }
  for (const problem of result.health) console.log(`health: FAIL ${problem}`);
  const failed = reports.some(([, r]) => r.failures.length > 0) || result.health.length > 0;
  console.log(
    `seed ${result.seed}, ${((Date.now() - started) / 1000).toFixed(0)} s: ${failed ? 'FAILED' : 'ok'} (replay: --seed ${result.seed})`,
  );
  process.exitCode = failed ? 1 : 0;
});
