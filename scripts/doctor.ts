import { parseArgs } from 'node:util';
import { createDb } from '../shared/db/database.ts';
import { checkSchema, schemaObjects, writeManifest } from '../shared/db/doctor.ts';
import { runCli } from '../shared/runtime/cli.ts';

/**
 * `npm run doctor`: says whether the database holds every table, index, constraint, trigger and
 * function the migrations define (shared/db/doctor.ts); exits 1 when not. `--write-manifest`
 * (developers, on a freshly migrated database) writes the list the check compares with.
 */
const { values } = parseArgs({ options: { 'write-manifest': { type: 'boolean', default: false } } });
await runCli(async (config) => {
  const { db } = createDb(config.DATABASE_URL, 1);
  try {
    if (values['write-manifest']) {
      const manifest = writeManifest(await schemaObjects(db));
      console.log(`schema-manifest.json: ${manifest.objects.length} objects of ${manifest.migration}`);
      return;
    }
    const report = await checkSchema(db);
    for (const line of report.extra) console.log(`not from the migrations (left alone): ${line}`);
    if (report.problems.length === 0) {
      console.log('schema complete: every object the migrations define is there');
      return;
    }
    for (const line of report.problems) console.error(line);
    console.error(
      `${report.problems.length} problem(s): restore the database again (docs/operations.md, "Backup and restore") or recreate the objects named`,
    );
    process.exitCode = 1;
  } finally {
    await db.destroy();
  }
});
