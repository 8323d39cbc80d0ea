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

// Services reach the kernel through their registrations (shared/kernel/registration.ts), listed
// in shared/services/index.ts: the kernel and accounts import no other service, config none at all.
const SERVICES = ['tracking', 'places', 'partners', 'catalogue'].map((s) => `shared/${s}/`);

test('accounts, the kernel and config import no service; the tracking exports do not import accounts', (t) => {
  const reaching = (files: string[], forbidden: string[]) =>
    files.flatMap((file) =>
      importsOf(file)
        .filter((i) => i.file !== undefined && forbidden.some((f) => i.file?.startsWith(f)))
        .map((i) => `${file} imports ${i.specifier}`),
    );
  t.deepEqual(reaching([...tsFilesUnder('shared/accounts'), ...tsFilesUnder('shared/kernel')], SERVICES), []);
  t.deepEqual(reaching(['shared/config.ts'], [...SERVICES, 'shared/accounts/', 'shared/services/']), []);
  t.deepEqual(reaching(tsFilesUnder('shared/tracking/exports'), ['shared/accounts/']), []);
});
