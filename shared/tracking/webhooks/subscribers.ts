import type { Subscribers } from '../../unit-of-work/unit-of-work.ts';
import type { TrackingDomainEvent } from '../domain-events.ts';
import { emitActivityEvent } from './events.ts';
import { emitExportReady } from './export-event.ts';
import { emitImportEvent } from './import-event.ts';
import { emitChallengeAchieved, emitEquipmentAlert } from './progress-events.ts';
import { emitRecordsUpdate } from './records-event.ts';
import { emitShareEvent } from './share-event.ts';

/**
 * The web hook event each domain event becomes (docs/webhooks.md, "Events"), written in the
 * change's transaction only when a hook of the user listens (events.ts).
 */
export const WEBHOOK_SUBSCRIBERS: Subscribers<TrackingDomainEvent> = {
  ActivityCreated: [(uow, e) => emitActivityEvent(uow.trx, 'activity_create', e.activity).then(() => {})],
  ActivityUpdated: [(uow, e) => emitActivityEvent(uow.trx, 'activity_update', e.activity).then(() => {})],
  ActivityDeleted: [(uow, e) => emitActivityEvent(uow.trx, 'activity_delete', e.activity).then(() => {})],
  ThumbnailDrawn: [(uow, e) => emitActivityEvent(uow.trx, 'thumbnail_ready', e.activity).then(() => {})],
  RecordsUpdated: [(uow, e) => emitRecordsUpdate(uow.trx, e.userId, e.sports).then(() => {})],
  ExportReady: [(uow, e) => emitExportReady(uow.trx, e.exportId, e.publicUrl).then(() => {})],
  GearAlertReached: [(uow, e) => emitEquipmentAlert(uow.trx, e.equipment).then(() => {})],
  ChallengeAchieved: [(uow, e) => emitChallengeAchieved(uow.trx, e.userId, e.challengeId).then(() => {})],
  ImportEnded: [(uow, e) => emitImportEvent(uow.trx, e.job).then(() => {})],
  ShareRequested: [(uow, e) => emitShareEvent(uow.trx, 'share_request', e.share)],
  ShareAccepted: [(uow, e) => emitShareEvent(uow.trx, 'share_user_create', e.share)],
  ShareDeleted: [(uow, e) => emitShareEvent(uow.trx, 'share_user_delete', e.share)],
};
