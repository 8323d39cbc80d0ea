import test from 'ava';
import { importsOf, tsFilesUnder } from './helpers/imports.ts';

// What the imports of the code may not do (issue 37): a migration runs frozen SQL, never
// today's code, so a fresh database ends the same whatever the code of the day.

const MIGRATIONS = 'shared/db/migrations';

test('a migration imports kysely and other migrations only', (t) => {
  const outside = tsFilesUnder(MIGRATIONS).flatMap((file) =>
    importsOf(file)
      .filter((i) =>
        i.file === undefined
          ? i.specifier !== 'kysely' && !i.specifier.startsWith('kysely/')
          : !i.file.startsWith(`${MIGRATIONS}/`),
      )
      .map((i) => `${file} imports ${i.specifier}`),
  );
  t.deepEqual(outside, [], 'a backfill needing code is a command or job the upgrade notes name (docs/operations.md)');
  t.true(tsFilesUnder(MIGRATIONS).length > 30, 'the migrations were found');
});
