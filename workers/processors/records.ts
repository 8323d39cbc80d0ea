import type { QueueProcessor, TypedJob } from '../processor.ts';

// TODO(issue 11): the records computation replaces this handler.
async function activityChanged(_job: TypedJob<'records', 'activity-changed'>): Promise<{ status: 'skipped' }> {
  return { status: 'skipped' };
}

export const recordsProcessor: QueueProcessor<'records'> = { 'activity-changed': activityChanged };
