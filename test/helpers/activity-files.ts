import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { ActivityContent } from '../../shared/tracking/activities/data.ts';
import { exportGpx } from '../../shared/tracking/formats/gpx-export.ts';
import { ImportError } from '../../shared/tracking/formats/import-error.ts';
import { importActivityFile } from '../../shared/tracking/formats/import-file.ts';
import type { ImportedActivity } from '../../shared/tracking/formats/import-options.ts';
import { exportTcx } from '../../shared/tracking/formats/tcx-export.ts';

/** Shared by the test/tracking-formats-*.test.ts files (not a test file itself). */

export const FIXTURES = fileURLToPath(new URL('../fixtures/tracking/', import.meta.url));
export const fixture = (name: string) => readFile(path.join(FIXTURES, name));
const SCHEMAS = {
  gpx: path.join(FIXTURES, 'schemas/gpx-1.1.xsd'),
  tcx: path.join(FIXTURES, 'schemas/TrainingCenterDatabasev2.xsd'),
};
const run = promisify(execFile);

/**
 * The schema check of a test file: documents are written in the folder `dir()` names (the file's
 * own temporary folder) and validated there against their official schema.
 */
export function schemaValidator(dir: () => string) {
  let written = 0;
  /** Validates a document against its official schema with xmllint; the error names the line. */
  return async function assertValid(t: { pass: (m?: string) => void }, format: 'gpx' | 'tcx', document: string) {
    const file = path.join(dir(), `${written++}.${format}`);
    await writeFile(file, document);
    try {
      await run('xmllint', ['--noout', '--schema', SCHEMAS[format], file]);
    } catch (err) {
      throw new Error(`${format} export does not validate: ${(err as { stderr?: string }).stderr}`);
    }
    t.pass();
  };
}

/** Export, re-import, export again: the two documents must be identical. */
export function assertRoundTrip(
  t: { is: (a: unknown, b: unknown, m?: string) => void },
  format: 'gpx' | 'tcx',
  content: ActivityContent,
) {
  const exporter = format === 'gpx' ? exportGpx : exportTcx;
  const first = exporter(content);
  const again = exporter(importActivityFile(Buffer.from(first)).content);
  t.is(again, first, `${format} export -> import -> export changed the document`);
  return first;
}

export function refusal(fn: () => unknown): ImportError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ImportError) return err;
    throw err;
  }
  throw new Error('the file was imported, a refusal was expected');
}

export const channel = (a: ImportedActivity, datatype: number) => {
  const values = a.content.datastream.channels.get(datatype);
  return values ? Array.from(values, (v) => (Number.isNaN(v) ? null : v)) : undefined;
};
export const summary = (a: ImportedActivity) => Object.fromEntries(a.content.summaries);
