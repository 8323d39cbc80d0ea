import { createDb } from '../shared/db/database.ts';
import { orderSpatially, SPATIAL_TABLES } from '../shared/places/spatial-order.ts';
import { parseOptions, runCli, usageError } from '../shared/runtime/cli.ts';

const USAGE = `usage: npm run places:order [-- --memory SIZE]
Rewrites places and place_activities in spatial order (CLUSTER) and rebuilds their indexes over
that order, one table after the other, so that a search reads a few pages however many places
there are. Each table is locked during its rewrite (its searches and writes wait): run it in a
quiet hour, once the places have grown by a large fraction since the last run.
Connect to PostgreSQL directly (DATABASE_URL), not through a transaction pooler.
  --memory SIZE   maintenance_work_mem for the sorts and index builds (default 256MB)
Prints each table's time as JSON lines.`;

const OPTIONS = { memory: { type: 'string', default: '256MB' } } as const;

/** `npm run places:order`: docs/scale-out.md, "Places in spatial order". */
await runCli(async (config) => {
  const args = parseOptions(OPTIONS, USAGE);
  if (!/^\d{1,7}(kB|MB|GB)$/.test(args.memory)) usageError(USAGE, `--memory: not a size such as 256MB: ${args.memory}`);
  // The pool itself: Kysely opens (and so ends) its pool only once it has run a query.
  const { pool } = createDb(config.DATABASE_URL, 1);
  const client = await pool.connect();
  try {
    await client.query(`set maintenance_work_mem = '${args.memory}'`);
    for (const { table } of SPATIAL_TABLES) {
      const started = Date.now();
      await orderSpatially(client, table);
      console.log(JSON.stringify({ table, seconds: (Date.now() - started) / 1000 }));
    }
  } finally {
    client.release();
    await pool.end();
  }
});
