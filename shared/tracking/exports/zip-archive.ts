import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { ZipFile } from 'yazl';

/** One file of an archive, as its manifest lists it. */
export interface ArchiveEntry {
  path: string;
  /** Uncompressed size. */
  bytes: number;
  /** SHA-256 of the uncompressed bytes, in hex. */
  sha256: string;
}

/**
 * A zip written as a stream to a temporary file beside `file`, renamed into place once complete
 * (a reader never sees half an archive). Entries are added one at a time, each read as the zip
 * takes it, so one entry's chunks at most are in memory; each is hashed on the way. Every entry
 * carries `mtime`, not the time of the run, so the same entries make the same bytes.
 */
export class ZipArchive {
  readonly #file: string;
  readonly #temp: string;
  readonly #zip = new ZipFile();
  readonly #failed: Promise<never>;
  readonly #written: Promise<void>;
  readonly #entry: { mtime: Date; mode: number };
  readonly #entries: ArchiveEntry[] = [];

  private constructor(file: string, mtime: Date) {
    this.#file = file;
    this.#temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    this.#entry = { mtime, mode: 0o100644 };
    // yazl reports its own errors (a bad stream) as events; the file stream's come through pipeline.
    this.#failed = new Promise<never>((_, reject) => this.#zip.once('error', reject));
    this.#written = pipeline(this.#zip.outputStream, createWriteStream(this.#temp));
    // Either may settle while the caller waits on something else: never an unhandled rejection.
    this.#failed.catch(() => {});
    this.#written.catch(() => {});
  }

  /** Starts the archive that will be `file` (an absolute path; its folder is created). */
  static async create(file: string, mtime: Date): Promise<ZipArchive> {
    await mkdir(path.dirname(file), { recursive: true });
    return new ZipArchive(file, mtime);
  }

  /** The entries added with `add` so far, in order. */
  get entries(): readonly ArchiveEntry[] {
    return this.#entries;
  }

  /**
   * Adds entry `name` from `chunks` and waits until the zip has read them all (the next entry is
   * produced only then). `compress: false` for data already compressed (pictures).
   */
  async add(
    name: string,
    chunks: Iterable<Buffer> | AsyncIterable<Buffer>,
    options: { compress?: boolean } = {},
  ): Promise<ArchiveEntry> {
    const hash = createHash('sha256');
    let bytes = 0;
    async function* hashed() {
      for await (const chunk of chunks) {
        hash.update(chunk);
        bytes += chunk.length;
        yield chunk;
      }
    }
    const stream = Readable.from(hashed(), { objectMode: false });
    this.#zip.addReadStream(stream, name, { ...this.#entry, compress: options.compress ?? true });
    await Promise.race([finished(stream), this.#failed, this.#written]);
    const entry = { path: name, bytes, sha256: hash.digest('hex') };
    this.#entries.push(entry);
    return entry;
  }

  /** Adds a file as entry `name`; it is read when the zip reaches it, by `finish` at the latest. */
  addFile(file: string, name: string): void {
    this.#zip.addFile(file, name, this.#entry);
  }

  /** Ends the zip and puts it in place; returns its size in bytes. */
  async finish(): Promise<number> {
    this.#zip.end();
    await Promise.race([this.#written, this.#failed]);
    await rename(this.#temp, this.#file);
    return (await stat(this.#file)).size;
  }

  /** Stops writing and removes the temporary file (after a failure). */
  async abort(): Promise<void> {
    // Stops the zip's file stream (its rejection is handled above) before the file goes.
    (this.#zip.outputStream as Readable).destroy();
    await rm(this.#temp, { force: true });
  }
}
