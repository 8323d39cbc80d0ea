import type { Kysely } from 'kysely';
import type { Database } from '../db/schema/index.ts';
import { runUnitOfWork, type UnitOfWork } from '../unit-of-work/unit-of-work.ts';
import type { TrackingDomainEvent } from './domain-events.ts';
import { WEBHOOK_SUBSCRIBERS } from './webhooks/subscribers.ts';

/** A tracking use case's unit of work: its jobs and domain events (shared/unit-of-work/unit-of-work.ts). */
export type TrackingWork = UnitOfWork<TrackingDomainEvent>;

/** Runs a tracking use case as one unit of work, its domain events heard by the tracking subscribers. */
export const trackingWork = <T>(db: Kysely<Database>, work: (uow: TrackingWork) => Promise<T>): Promise<T> =>
  runUnitOfWork(db, WEBHOOK_SUBSCRIBERS, work);
