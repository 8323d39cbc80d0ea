import type { JobError } from '../../db/schema/jobs.ts';
import { DomainError } from '../../errors.ts';
import { DuplicateActivityError } from '../activities/duplicates.ts';
import { ImportError } from '../formats/import-error.ts';
import { iri } from '../iri.ts';

/**
 * A refused import as a job's `error`: the status and reasons the synchronous path answers
 * (api/tracking/activity-files.ts), so a client reads one set of refusals whichever path ran.
 * Undefined for an error that is not a refusal (the job is tried again).
 */
export function jobErrorOf(error: unknown): JobError | undefined {
  if (error instanceof DuplicateActivityError)
    return { status: 409, title: 'Conflict', detail: error.message, activity: iri('activities', error.existingId) };
  if (error instanceof ImportError) {
    const violations = [{ propertyPath: 'file', message: error.message }];
    if (error.code === 'unsupported-format')
      return { status: 415, title: 'Unsupported Media Type', detail: error.message, violations };
    if (error.code === 'too-large')
      return { status: 413, title: 'Payload Too Large', detail: error.message, violations };
    return { status: 422, title: 'The file cannot be imported', detail: error.message, violations };
  }
  if (error instanceof DomainError && error.kind === 'invalid')
    return {
      status: 422,
      title: 'The file cannot be imported',
      detail: error.errors.map((e) => e.message).join('; ') || error.message,
      violations: error.errors.map((e) => ({
        propertyPath: e.path.replace(/^(body|query)\.?/, ''),
        message: e.message,
      })),
    };
  if (error instanceof DomainError && error.kind === 'conflict')
    return { status: 409, title: 'Conflict', detail: error.message };
  return undefined;
}

/** The error of a job whose every attempt failed on the server's side. */
export const serverFailure = (): JobError => ({
  status: 500,
  title: 'Internal Server Error',
  detail: 'The import failed on the server after several attempts; send the file again',
});
