import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Files under STORAGE_DIR, addressed by a relative POSIX path (`places/<uuid>/<sport>/<name>.png`),
 * which is what the database stores and what /media/<path> serves.
 */

/** Media types of the files we write, by extension; anything else is not served. */
export const MEDIA_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
};

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * The absolute path of a relative storage path, or undefined when the path is not one we could
 * have written: every segment must be a plain name (no `..`, no leading dot, no backslash, no
 * NUL, no empty segment), and the result must stay inside the storage root.
 */
export function resolveStoragePath(storageDir: string, relative: string): string | undefined {
  if (relative.length === 0 || relative.length > 512) return undefined;
  const segments = relative.split('/');
  if (!segments.every((s) => SEGMENT.test(s) && !s.includes('..'))) return undefined;
  const root = path.resolve(storageDir);
  const full = path.resolve(root, ...segments);
  return full.startsWith(root + path.sep) ? full : undefined;
}

/** A random, unguessable file name part (URL-safe). */
export function randomName(): string {
  return randomBytes(12)
    .toString('base64url')
    .replace(/^[-_.]/, 'x');
}

/** Writes a file so readers never see half of it: temp file in the same folder, then rename. */
export async function writeStorageFile(storageDir: string, relative: string, data: Buffer): Promise<string> {
  const full = resolveStoragePath(storageDir, relative);
  if (!full) throw new Error(`invalid storage path "${relative}"`);
  await mkdir(path.dirname(full), { recursive: true });
  const temp = `${full}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temp, data);
    await rename(temp, full);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  return full;
}

/** Removes a stored file if it exists (best effort clean-up of replaced pictures). */
export async function removeStorageFile(storageDir: string, relative: string): Promise<void> {
  const full = resolveStoragePath(storageDir, relative);
  if (full) await rm(full, { force: true });
}
