import type { PlaceEditFields, PlaceStatus } from '../db/schema/places.ts';
import type { Viewer } from './activities.ts';
import { PARTNER_FIELDS } from './permissions.ts';

/**
 * The rules of moderation (docs/places.md, "Moderation"), without the database.
 *
 * What the public sees of a place has been approved by staff. A place added by a user waits as
 * `pending`; once approved, a user's later changes to its text (fields of PUT, notes, including
 * notes sent with variant A) wait beside it as a pending edit, and the approved version stays
 * public until staff approve the edit. Staff changes apply at once.
 */

/** Place columns a pending edit may carry (the PUT fields but the partner ones). */
export const EDIT_FIELDS = [
  'name',
  'email',
  'phone',
  'website',
  'booking_url',
  'social_username',
  'address',
  'city',
  'province',
  'country',
] as const satisfies readonly (keyof PlaceEditFields)[];

/** Does this caller's change of a place in this status wait for staff? Not when nobody else sees the place yet. */
export function changeWaitsForStaff(caller: Viewer, status: PlaceStatus): boolean {
  return !caller.staff && status === 'approved';
}

/**
 * Splits PUT fields into the content fields (moderated) and the partner fields (`featured`,
 * `partner`): partner accounts are granted by the operator and those two hold a boolean and the
 * slug of an existing partner, no text of the caller's, so they apply at once.
 */
export function splitChanges<T extends object>(changes: T): { content: PlaceEditFields; partner: Partial<T> } {
  const content: Record<string, unknown> = {};
  const partner: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(changes)) {
    if (value === undefined) continue;
    if (PARTNER_FIELDS.includes(key)) partner[key] = value;
    else if ((EDIT_FIELDS as readonly string[]).includes(key)) content[key] = value;
  }
  return { content: content as PlaceEditFields, partner: partner as Partial<T> };
}

/** Only the columns an edit may change, whatever a stored edit holds. */
export function editFields(stored: object): PlaceEditFields {
  return splitChanges(stored).content;
}

export type Decision = 'approved' | 'rejected';

/**
 * What a staff decision acts on: what is waiting on the place. An approved place with pending
 * edits: approve applies them, reject drops them and the place stays as it was (a spam edit
 * must not take a good place down). Otherwise the decision sets the place's status, and approve
 * also applies any edit left (reject drops them).
 */
export function moderationOutcome(
  decision: Decision,
  status: PlaceStatus,
  hasEdits: boolean,
): { status: PlaceStatus; edits: 'apply' | 'drop' } {
  if (decision === 'approved') return { status: 'approved', edits: 'apply' };
  if (status === 'approved' && hasEdits) return { status: 'approved', edits: 'drop' };
  return { status: 'rejected', edits: 'drop' };
}

/**
 * Approving edits names the newest `revision` of `pending_edits` staff reviewed: an edit changed
 * since (its author could swap a reviewed text for spam between the read and the click) is
 * refused, never applied unseen. 'missing': edits wait and no revision was sent.
 */
export function reviewProblem(
  revisions: readonly string[],
  reviewed: string | undefined,
): 'missing' | 'stale' | undefined {
  if (!revisions.length) return undefined;
  if (reviewed === undefined) return 'missing';
  return revisions.some((r) => BigInt(r) > BigInt(reviewed)) ? 'stale' : undefined;
}
