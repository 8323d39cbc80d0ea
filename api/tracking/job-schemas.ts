import { z } from 'zod';
import { JOB_STATES, JOB_TYPES } from '../../shared/db/schema/jobs.ts';
import { BATCH_JOB_TYPES } from '../../shared/tracking/jobs/batch-params.ts';
import type { JobRow } from '../../shared/tracking/jobs/job-fields.ts';
import { jobFields } from '../../shared/tracking/jobs/job-fields.ts';
import { JOBS_PATH } from '../../shared/tracking/jobs/job-store.ts';
import type { HydraView } from '../http/formats/format.ts';
import { dateFilterShape, dateTimeOut, listFilterShape, pagingShape, refOf, writeBody } from './schemas.ts';

/** The Job of v2.26 (`/v2/jobs`) and our members (docs/tracking-files.md, "Jobs"). */

const iriOut = (example: string) => z.string().meta({ format: 'iri-reference', example });

export const jobSchema = z
  .object({
    id: z.string(),
    state: z.enum(JOB_STATES).meta({
      description:
        '`pending` (queued), `running`, `done`, `failed` (see `error`), `cancelled` (PUT before it started), `skipped` (a file of a bulk import that is no GPX, TCX or FIT file: see `error`)',
    }),
    type: z.enum(JOB_TYPES),
    params: z.array(z.string()).meta({
      description: "what was asked, as `name=value` (an import's fields, a recompute's scope)",
      example: ['sport=121'],
    }),
    startedAt: dateTimeOut.nullable(),
    owner: iriOut('/v2/users/a1b2c3'),
    activity: iriOut('/v2/activities/9d1c')
      .nullable()
      .meta({ description: 'the activity an import created, once done' }),
    tags: z.array(z.string()),
    uniqueKey: z.string().nullable(),
    parent: iriOut('/v2/jobs/5b1f').nullable().meta({ description: "a bulk import's file: its bulk import" }),
    dueDate: dateTimeOut.nullable(),
    waitingJob: z.string().nullable(),
    createdAt: dateTimeOut,
    updatedAt: dateTimeOut,
    finishedAt: dateTimeOut.nullable(),
    fileName: z.string().nullable().meta({ description: "a bulk import's file: its path in the zip" }),
    progress: z.object({ total: z.number().int(), done: z.number().int(), failed: z.number().int() }).nullable().meta({
      description:
        'a bulk import: its files (`total`), those imported (`done`) and those that ended without an activity (`failed`: refused, skipped or cancelled); a batch job (staff): the activities in scope (users for `statistics_rebuild`), those whose work is done and those whose job failed for good, updated while it runs',
    }),
    result: z.record(z.string(), z.unknown()).nullable().meta({
      description:
        'an import: `format`, `sportSource`, `warnings`; a bulk import: what it did at its end; a batch job: what it enqueued',
    }),
    error: z
      .object({
        status: z.number().int().meta({ description: 'the status the synchronous path answers for the same refusal' }),
        title: z.string(),
        detail: z.string(),
        violations: z.array(z.object({ propertyPath: z.string(), message: z.string() })).optional(),
        activity: z.string().optional().meta({ description: 'a duplicate: the stored activity it duplicates' }),
      })
      .nullable(),
  })
  .meta({ id: 'Job' });

export const jobView: HydraView<JobRow, typeof jobSchema> = {
  type: 'Job',
  path: JOBS_PATH,
  id: (row) => row.id,
  fields: (row) => jobFields(row),
};

export const jobListQuery = z.object({
  ...pagingShape,
  ...listFilterShape('state', z.enum(JOB_STATES)),
  ...listFilterShape('type', z.enum(JOB_TYPES)),
  ...listFilterShape('parent', refOf('jobs')),
  ...dateFilterShape('createdAt'),
});

const READ_ONLY = Object.keys(jobSchema.shape).filter((k) => k !== 'state');

/** PUT: `state: cancelled` is the one change a job takes. */
export const jobUpdateBody = writeBody('Job', { state: z.string().optional() }, READ_ONLY);

const sportId = z.union([z.string().max(200), z.number().int()]);

/**
 * POST (staff): a batch job and its scope, the options of `npm run records:recompute`
 * (shared/tracking/jobs/batch-params.ts reads them as the command does).
 */
export const jobCreateBody = z.strictObject({
  type: z.enum(BATCH_JOB_TYPES).meta({
    description:
      '`records_recompute` (best efforts and records), `statistics_rebuild` (statistics by period, gear totals, challenges) or `thumbnails_rebuild` (the thumbnails missing from storage); imports are started by POST /v2/activities',
  }),
  params: z
    .strictObject({
      user: z.string().max(200).optional().meta({ description: "one tracking user (the account's ldid)" }),
      all: z.boolean().optional().meta({ description: 'every user (give `user` or `all`)' }),
      sport: z
        .union([sportId, z.array(sportId).max(100)])
        .optional()
        .meta({ description: 'only these sports: ids, `121,126` or IRIs', example: [121, 126] }),
      since: z.string().max(64).optional().meta({
        description: 'activities starting at or after: `YYYY-MM-DD` (midnight UTC) or an ISO 8601 instant',
        example: '2024-01-01',
      }),
      until: z.string().max(64).optional().meta({ description: 'activities starting before', example: '2025-01-01' }),
    })
    .meta({ example: { user: '3f2c9b6a0d1e4f5a8b7c6d5e4f3a2b1c', sport: [121] } }),
});
