import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import test from 'ava';
import { IMPORTS_STORAGE_DIR } from '../shared/tracking/jobs/job-files.ts';
import { startTrackingApi } from './helpers/tracking.ts';
import { gpxOf, makeZip } from './helpers/zips.ts';

// BULK_IMPORT_LIMIT (README, docs/tracking-files.md "Bulk import"): a larger zip is a 413 naming
// the limit, whether its Content-Length says so or its chunks go past it; no job and no file stay.

const api = await startTrackingApi({ env: { BULK_IMPORT_LIMIT: '4kb' } });
test.after.always(async () => {
  await api.close();
  await rm(api.config.STORAGE_DIR, { recursive: true, force: true });
});

const zipOver = () => makeZip([{ name: '1.gpx', bytes: gpxOf(new Date('2024-05-01T07:00:00Z'), 400), store: true }]);

test('a zip over BULK_IMPORT_LIMIT is a 413 naming it; nothing is kept', async (t) => {
  const u = await api.user();
  const zip = await zipOver();
  t.true(zip.length > 4096);
  const declared = await api.call('POST', '/file_import/activities', u, {
    raw: zip,
    headers: { 'content-type': 'application/zip' },
  });
  t.is(declared.status, 413, JSON.stringify(declared.body));
  t.regex(JSON.stringify(declared.body), /BULK_IMPORT_LIMIT/);
  // Chunked: no Content-Length, the limit is counted as the bytes arrive.
  const chunked = await api.fetch('/v2/activities', {
    method: 'POST',
    headers: { authorization: `Bearer ${u.token}`, 'x-api-key': api.apiKey, 'content-type': 'application/zip' },
    body: new Blob([new Uint8Array(zip)]).stream(),
    duplex: 'half',
  } as RequestInit);
  t.is(chunked.status, 413, await chunked.text());
  const jobs = await api.database.db.selectFrom('jobs').select('id').where('user_id', '=', u.ldid).execute();
  t.deepEqual(jobs, []);
  const left = await readdir(path.join(api.config.STORAGE_DIR, IMPORTS_STORAGE_DIR)).catch(() => []);
  t.deepEqual(left, []);
});
