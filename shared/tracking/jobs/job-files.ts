import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { resolveStoragePath } from '../../media/storage.ts';

/**
 * The files of jobs under STORAGE_DIR (`imports/<job id>`): written and flushed to disk before
 * the job's row commits (so a 202 never names a job without its file), removed when the job ends.
 */

export const IMPORTS_STORAGE_DIR = 'imports';

/** Where the file of job `jobId` is kept, relative to STORAGE_DIR. */
export const jobFilePath = (jobId: string) => `${IMPORTS_STORAGE_DIR}/${jobId}`;

function absolute(storageDir: string, relative: string): string {
  const full = resolveStoragePath(storageDir, relative);
  if (!full) throw new Error(`invalid storage path "${relative}"`);
  return full;
}

/**
 * Writes the file (its bytes, or chunks as they arrive: a bulk import's zip is never whole in
 * memory) and flushes it to disk (temporary name, fsync, rename): it survives a crash once this
 * returns. A source that fails leaves nothing behind.
 */
export async function writeJobFile(
  storageDir: string,
  relative: string,
  source: Uint8Array | AsyncIterable<Uint8Array>,
): Promise<number> {
  const full = absolute(storageDir, relative);
  await mkdir(path.dirname(full), { recursive: true });
  const temp = `${full}.${randomBytes(4).toString('hex')}.tmp`;
  const handle = await open(temp, 'w');
  let size = 0;
  try {
    if (source instanceof Uint8Array) {
      await handle.writeFile(source);
      size = source.length;
    } else
      for await (const chunk of source) {
        await handle.write(chunk);
        size += chunk.length;
      }
    await handle.sync();
  } catch (error) {
    await handle.close();
    await rm(temp, { force: true });
    throw error;
  }
  await handle.close();
  await rename(temp, full);
  return size;
}

export async function readJobFile(storageDir: string, relative: string): Promise<Buffer> {
  const { readFile } = await import('node:fs/promises');
  return readFile(absolute(storageDir, relative));
}

/** The file's absolute path (a zip is read in place). */
export const jobFileOnDisk = (storageDir: string, relative: string) => absolute(storageDir, relative);

export async function removeJobFile(storageDir: string, relative: string | null): Promise<void> {
  if (relative) await rm(absolute(storageDir, relative), { force: true });
}

/** The stored files of job rows (those still holding one: a job that has not ended). */
export const storedJobFiles = (rows: { file_path: string | null }[]) =>
  rows.flatMap((r) => (r.file_path === null ? [] : [r.file_path]));
