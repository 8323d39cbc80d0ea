import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { limitName, ZIP_LIMITS, type ZipLimits, ZipRefusal } from './zip-limits.ts';

/**
 * Reads a bulk import's zip (docs/tracking-files.md, "Bulk import") with yauzl, which reads the
 * central directory first and gives each entry's sizes before its bytes: `inspectZip` checks
 * every limit of zip-limits.ts on the directory alone, `readZipMember` then inflates one member,
 * stopped by yauzl at its declared size.
 */

/** A member of the zip, as its central directory describes it. */
export interface ZipMemberInfo {
  /** Its path in the zip (`activities/123.gpx.gz`), checked: relative, no `..`, no backslash. */
  name: string;
  compressedSize: number;
  uncompressedSize: number;
}

/** An opened zip whose directory passed the limits: its members (folders left out), in order. */
export interface InspectedZip {
  members: ZipMemberInfo[];
  /** Sum of the members' declared sizes. */
  totalBytes: number;
  /** Reads one member (at most its declared size; ZIP_LIMITS.maxEntryBytes). */
  read(member: ZipMemberInfo): Promise<Buffer>;
  close(): void;
}

const ZIP_MAGIC = [0x50, 0x4b];

/** Whether `head` may start a zip (a local header, or the end record of an empty zip). */
export const looksLikeZip = (head: Uint8Array) => head[0] === ZIP_MAGIC[0] && head[1] === ZIP_MAGIC[1];

/** yauzl's refusals of a name, as ours. */
function nameRefusal(error: Error): ZipRefusal | undefined {
  if (/^(absolute path|invalid relative path|invalid characters in fileName)/.test(error.message))
    return new ZipRefusal(
      'path-names',
      `a member's path is refused (${error.message}): paths must be relative, without ".." or a drive`,
    );
  return undefined;
}

function entries(zip: ZipFile, limits: ZipLimits): Promise<Entry[]> {
  return new Promise((resolve, reject) => {
    const found: Entry[] = [];
    zip.on('entry', (entry: Entry) => {
      found.push(entry);
      zip.readEntry();
    });
    zip.once('end', () => resolve(found));
    zip.once('error', (error: Error) => reject(nameRefusal(error) ?? notAZip(error)));
    if (zip.entryCount > limits.maxEntries)
      reject(
        new ZipRefusal(
          'maxEntries',
          `the zip holds ${zip.entryCount} entries, more than a bulk import takes (${limitName('maxEntries', limits)})`,
        ),
      );
    else zip.readEntry();
  });
}

const notAZip = (error: Error) => new ZipRefusal('not-a-zip', `the body is not a readable zip (${error.message})`);

/** The problems of one entry against the limits, else undefined. */
function entryProblem(entry: Entry, limits: ZipLimits): ZipRefusal | undefined {
  const name = entry.fileName;
  if (Buffer.byteLength(name) > limits.maxNameBytes)
    return new ZipRefusal(
      'maxNameBytes',
      `a member's path is longer than ${limits.maxNameBytes} bytes (${limitName('maxNameBytes', limits)})`,
    );
  // NUL and other controls have no place in a file name.
  if ([...name].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f))
    return new ZipRefusal('path-names', `the member path ${JSON.stringify(name)} holds control characters`);
  const depth = name.replace(/\/$/, '').split('/').length - 1;
  if (depth > limits.maxDepth)
    return new ZipRefusal(
      'maxDepth',
      `the member ${name} is ${depth} folders deep, deeper than a bulk import reads (${limitName('maxDepth', limits)})`,
    );
  if (entry.isEncrypted()) return new ZipRefusal('encrypted', `the member ${name} is encrypted`);
  if (entry.uncompressedSize > limits.maxEntryBytes)
    return new ZipRefusal(
      'maxEntryBytes',
      `the member ${name} holds ${entry.uncompressedSize} bytes, more than one activity file may (${limitName('maxEntryBytes', limits)})`,
    );
  // An empty or stored member has no ratio to speak of; a compressed one must stay under the ratio.
  const ratio = entry.uncompressedSize / Math.max(1, entry.compressedSize);
  if (entry.uncompressedSize > 0 && ratio > limits.maxRatio)
    return new ZipRefusal(
      'maxRatio',
      `the member ${name} inflates ${Math.round(ratio)} times (${entry.compressedSize} to ${entry.uncompressedSize} bytes), a zip bomb's ratio (${limitName('maxRatio', limits)})`,
    );
  return undefined;
}

/**
 * Opens the zip at `file` (a path, or its bytes) and checks its central directory against the
 * limits; throws ZipRefusal naming the first limit broken, or `empty` when no member is a file.
 */
export async function inspectZip(file: string | Buffer, limits: ZipLimits = ZIP_LIMITS): Promise<InspectedZip> {
  const options = { lazyEntries: true, autoClose: false, validateEntrySizes: true };
  let zip: ZipFile;
  try {
    zip =
      typeof file === 'string' ? await yauzl.openPromise(file, options) : await yauzl.fromBufferPromise(file, options);
  } catch (error) {
    throw notAZip(error as Error);
  }
  try {
    const all = await entries(zip, limits);
    let totalBytes = 0;
    const members: ZipMemberInfo[] = [];
    const byName = new Map<string, Entry>();
    for (const entry of all) {
      const problem = entryProblem(entry, limits);
      if (problem) throw problem;
      totalBytes += entry.uncompressedSize;
      if (totalBytes > limits.maxTotalBytes)
        throw new ZipRefusal(
          'maxTotalBytes',
          `the zip's members add up to more than ${limits.maxTotalBytes} bytes (${limitName('maxTotalBytes', limits)})`,
        );
      if (entry.fileName.endsWith('/')) continue;
      members.push({
        name: entry.fileName,
        compressedSize: entry.compressedSize,
        uncompressedSize: entry.uncompressedSize,
      });
      byName.set(entry.fileName, entry);
    }
    if (members.length === 0) throw new ZipRefusal('empty', 'the zip holds no file');
    return {
      members,
      totalBytes,
      read: async (member) => {
        const entry = byName.get(member.name);
        if (!entry) throw new Error(`no member ${member.name}`);
        const stream = await zip.openReadStreamPromise(entry);
        const chunks: Buffer[] = [];
        for await (const chunk of stream) chunks.push(chunk as Buffer);
        return Buffer.concat(chunks);
      },
      close: () => zip.close(),
    };
  } catch (error) {
    zip.close();
    throw error;
  }
}
