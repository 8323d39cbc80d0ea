import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';

/**
 * Files of a storage folder that no row names any more (their owner deleted, a write killed
 * before its row said so), removed once old enough that no running write can still be about to
 * name them. The exports' cleanup and the imports' sweep use it, each with its own table.
 */
export interface OrphanSweep {
  /** The folder, absolute. */
  folder: string;
  /** A file name of the folder: group 1 the id of its row, group 2 present for a temporary file. */
  fileId: RegExp;
  /** Younger files are left alone. */
  minAgeS: number;
  /** Of these ids, those whose row still names its file (at most BATCH ids a call). */
  named: (ids: string[]) => Promise<Iterable<string>>;
  now?: Date;
}

const BATCH = 500;

/** Removes the old files no row names and the old temporary files; returns how many. */
export async function sweepOrphanFiles(sweep: OrphanSweep): Promise<number> {
  const now = (sweep.now ?? new Date()).getTime();
  const names = await readdir(sweep.folder).catch(() => [] as string[]);
  const old: { name: string; id: string; temporary: boolean }[] = [];
  for (const name of names) {
    const match = sweep.fileId.exec(name);
    if (!match?.[1]) continue;
    const info = await stat(path.join(sweep.folder, name)).catch(() => undefined);
    if (info?.isFile() && now - info.mtimeMs >= sweep.minAgeS * 1000)
      old.push({ name, id: match[1], temporary: match[2] !== undefined });
  }
  const ids = [...new Set(old.filter((f) => !f.temporary).map((f) => f.id))];
  const kept = new Set<string>();
  for (let i = 0; i < ids.length; i += BATCH) for (const id of await sweep.named(ids.slice(i, i + BATCH))) kept.add(id);
  let removed = 0;
  for (const file of old) {
    if (!file.temporary && kept.has(file.id)) continue;
    await rm(path.join(sweep.folder, file.name), { force: true });
    removed++;
  }
  return removed;
}
