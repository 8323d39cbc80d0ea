import cliProgress from 'cli-progress';
import { COMPUTE_STEPS, computeRecommendations } from '../shared/catalogue/recommendations-compute.ts';
import { createDb } from '../shared/db/database.ts';
import { migrateToLatest } from '../shared/db/migrate.ts';
import { runCli } from '../shared/runtime/cli.ts';

/**
 * `npm run recommendations:compute`: recomputes every sport recommendation now, in this process
 * (no worker or Redis needed), the same computation as the `recommendations` job. The progress
 * bar (stderr, on a terminal) counts the steps; the summary goes to stdout.
 */
await runCli(async (config) => {
  const { db } = createDb(config.DATABASE_URL, 1);
  const bar = new cliProgress.SingleBar(
    { format: 'recommendations [{bar}] {value}/{total} steps | {step}', stream: process.stderr, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  try {
    if (config.MIGRATE_ON_START) await migrateToLatest(db);
    bar.start(COMPUTE_STEPS.length, 0, { step: 'starting' });
    const result = await computeRecommendations(db, (step, rows) => bar.increment({ step: `${step}: ${rows} rows` }));
    bar.stop();
    console.log(`recommendations computed in ${result.durationMs} ms (one transaction; previous rows replaced)`);
    console.log(`  sport popularity (fallback order): ${result.counts.popularity} sports`);
    console.log(`  co-practice: ${result.counts.copractice} sport pairs`);
    console.log(`  cities: ${result.counts.cities} (city, sport) rows`);
    console.log(`  countries: ${result.counts.countries} (country, sport) rows`);
  } finally {
    bar.stop();
    await db.destroy();
  }
});
