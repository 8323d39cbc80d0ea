import type { Selectable } from 'kysely';
import type { ShareUsersTable } from '../db/schema/shares.ts';
import type { ActivityRow } from '../db/schema/tracking.ts';
import type { EquipmentRow } from './gear/store.ts';
import type { JobRow } from './jobs/job-fields.ts';

/**
 * What happens to an athlete's data, as the tracking use cases tell their unit of work
 * (shared/tracking/unit-of-work.ts): facts in the past tense, with the rows as they are once the
 * change is made. Their subscribers (web hooks today: shared/tracking/webhooks/subscribers.ts)
 * decide what follows; a use case does not know them.
 */
export type TrackingDomainEvent =
  | { type: 'ActivityCreated'; activity: ActivityRow }
  | { type: 'ActivityUpdated'; activity: ActivityRow }
  | { type: 'ActivityDeleted'; activity: ActivityRow }
  /** The activity's thumbnail was drawn (`activity.thumbnail` is its URL). */
  | { type: 'ThumbnailDrawn'; activity: ActivityRow }
  /** The user's records of these sports changed. */
  | { type: 'RecordsUpdated'; userId: string; sports: number[] }
  /** An export's archive is ready to download. */
  | { type: 'ExportReady'; exportId: string; publicUrl: string }
  /** Gear reached the distance its user set an alert at. */
  | { type: 'GearAlertReached'; equipment: EquipmentRow }
  /** A challenge's result reached its target, the first time. */
  | { type: 'ChallengeAchieved'; userId: string; challengeId: string }
  /** An import that ran as a job ended (a bulk import's file: its bulk import does). */
  | { type: 'ImportEnded'; job: JobRow }
  /** A user asked to share their activities with another (a pending share). */
  | { type: 'ShareRequested'; share: Selectable<ShareUsersTable> }
  /** The friend accepted a share: they see the sharer's activities from now on. */
  | { type: 'ShareAccepted'; share: Selectable<ShareUsersTable> }
  /** Either side deleted a share, whatever its status. */
  | { type: 'ShareDeleted'; share: Selectable<ShareUsersTable> };
