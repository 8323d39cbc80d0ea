import { ACTIVITY_LIMITS } from '../activities/content.ts';
import { ImportError } from '../formats/import-error.ts';
import { detectFormat } from '../formats/import-file.ts';
import type { ActivityFileFormat } from '../formats/import-options.ts';
import { type ListedActivity, listedPath, parseActivitiesCsv } from './activities-csv.ts';
import { gunzipMember, isGzip } from './gzip-member.ts';
import { ZIP_LIMITS, type ZipLimits } from './zip-limits.ts';
import { type InspectedZip, looksLikeZip, type ZipMemberInfo } from './zip-reader.ts';

/**
 * What each member of a bulk import's zip is (docs/tracking-files.md, "Bulk import"): an activity
 * file (GPX, TCX or FIT, maybe gzip-compressed), with what `activities.csv` says of it, or a file
 * skipped with the reason, reported per file. Nested archives are never opened.
 */

export type BulkMember =
  | {
      kind: 'activity';
      name: string;
      bytes: Buffer;
      format: ActivityFileFormat;
      /** What activities.csv says of the file, if it lists it. */
      listed?: ListedActivity;
    }
  | { kind: 'skipped'; name: string; reason: string };

/** The listing's name, wherever it is in the zip (the shallowest one wins). */
export const LISTING_NAME = 'activities.csv';

/** What archivers add that nobody put in the zip: left out silently. */
const isArchiverLitter = (name: string) => name.startsWith('__MACOSX/') || /(^|\/)\.DS_Store$/.test(name);

const baseName = (name: string) => name.slice(name.lastIndexOf('/') + 1);
const folderOf = (name: string) => name.slice(0, name.lastIndexOf('/') + 1);

const NESTED = 'an archive inside the zip is not opened (nested archives are not read)';

/** What one member's bytes are: an activity file of a format, or skipped saying why. */
export async function classifyMember(
  name: string,
  stored: Buffer,
  limits: ZipLimits = ZIP_LIMITS,
): Promise<{ bytes: Buffer; format: ActivityFileFormat } | { reason: string }> {
  if (stored.length === 0) return { reason: 'the file is empty' };
  if (looksLikeZip(stored) && /\.zip$/i.test(name)) return { reason: NESTED };
  let bytes = stored;
  if (isGzip(stored)) {
    const inflated = await gunzipMember(stored, limits);
    if ('problem' in inflated) return { reason: inflated.problem };
    if (isGzip(inflated.bytes) || looksLikeZip(inflated.bytes)) return { reason: NESTED };
    bytes = inflated.bytes;
  }
  try {
    return { bytes, format: detectFormat(bytes) };
  } catch (error) {
    if (error instanceof ImportError) return { reason: error.message.replace(/^the body /, 'the file ') };
    throw error;
  }
}

/** The listing member, if the zip has one: the shallowest `activities.csv`. */
function listingMember(members: ZipMemberInfo[]): ZipMemberInfo | undefined {
  const depth = (m: ZipMemberInfo) => m.name.split('/').length;
  return members
    .filter((m) => baseName(m.name).toLowerCase() === LISTING_NAME && !isArchiverLitter(m.name))
    .sort((a, b) => depth(a) - depth(b))[0];
}

export interface BulkContents {
  /** Every member but the listing and archivers' litter, in the zip's order. */
  members: ZipMemberInfo[];
  /** What activities.csv says, by path relative to its folder; empty without a listing. */
  listed: Map<string, ListedActivity>;
  /** Why the listing was not applied (it does not parse, has no Filename column...). */
  listingProblem?: string;
}

/** The zip's activity members and its listing, read (the listing only) and parsed. */
export async function bulkContents(zip: InspectedZip): Promise<BulkContents> {
  const listing = listingMember(zip.members);
  const members = zip.members.filter((m) => m !== listing && !isArchiverLitter(m.name));
  if (!listing) return { members, listed: new Map() };
  const text = new TextDecoder('utf-8').decode(await zip.read(listing));
  const parsed = parseActivitiesCsv(text, {
    nameLength: ACTIVITY_LIMITS.nameLength,
    commentLength: ACTIVITY_LIMITS.commentLength,
  });
  if ('problem' in parsed) return { members, listed: new Map(), listingProblem: parsed.problem };
  // The listing names files from its own folder (`activities/1.gpx` beside it).
  const folder = folderOf(listing.name);
  const listed = new Map<string, ListedActivity>();
  for (const [path, activity] of parsed.files) listed.set(listedPath(folder + path), activity);
  return { members, listed };
}

/** One member read and classified, with what the listing says of it. */
export async function bulkMember(
  zip: InspectedZip,
  contents: BulkContents,
  member: ZipMemberInfo,
  limits: ZipLimits = ZIP_LIMITS,
): Promise<BulkMember> {
  const found = await classifyMember(member.name, await zip.read(member), limits);
  if ('reason' in found) return { kind: 'skipped', name: member.name, reason: found.reason };
  const listed = contents.listed.get(member.name);
  return {
    kind: 'activity',
    name: member.name,
    bytes: found.bytes,
    format: found.format,
    ...(listed ? { listed } : {}),
  };
}
