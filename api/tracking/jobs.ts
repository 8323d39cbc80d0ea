import { startBatchJob } from '../../shared/tracking/jobs/batch-start.ts';
import { cancelJob } from '../../shared/tracking/jobs/job-cancel.ts';
import type { JobRow } from '../../shared/tracking/jobs/job-fields.ts';
import { findJob, JOBS_PATH, listJobs } from '../../shared/tracking/jobs/job-store.ts';
import type { AppContext } from '../context.ts';
import { Answer } from '../http/answer.ts';
import { hasRole } from '../http/auth.ts';
import { unprocessable } from '../http/errors.ts';
import { hydraSerializer } from '../http/formats/hydra.ts';
import type { ApiRouter } from '../http/route.ts';

import { jobCreateBody, jobListQuery, jobSchema, jobUpdateBody, jobView } from './job-schemas.ts';
import { dateFilterOf, listFilterOf } from './schemas.ts';
import { trackingResource } from './tracking-resource.ts';

/**
 * /v2/jobs (v2.26; docs/tracking-files.md "Jobs"): the caller's imports that ran on the workers,
 * bulk imports and their files, and the batch recomputes staff started; each read until it ends,
 * a pending one cancelled with PUT.
 */

const serializer = hydraSerializer(jobView);

/** `202 Accepted` with the job, `Location` naming it: what an operation answers when it started one. */
export function jobAccepted(app: Pick<AppContext, 'config'>, row: JobRow): Answer {
  const path = `${JOBS_PATH}/${row.id}`;
  const body = serializer.item(row, { baseUrl: app.config.PUBLIC_URL, path, querystring: '', query: {} });
  return new Answer(202, body, 'application/ld+json', { Location: `${app.config.PUBLIC_URL}${path}` });
}

/** How a 202 with a job is documented. */
export const jobAcceptedResponse = (description: string) => ({
  202: { description, schema: serializer.itemSchema(jobSchema) },
});

export function jobsResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  trackingResource(router, app, {
    path: '/jobs',
    item: jobSchema,
    hydra: jobView,
    notFound: 'No such job (or not yours)',
  })
    .list({
      summary: "The caller's jobs, newest first (a bulk import's files in their zip's order with `parent`)",
      description:
        'Filters: `state` / `state[]`, `type` / `type[]`, `parent` / `parent[]` (a bulk import: its files), `createdAt[after|before|strictly_after|strictly_before]`. Paging: `page`, `limit` (default 30, at most 100).',
      query: jobListQuery,
      handler: async ({ query, caller, principal }) => {
        const created = dateFilterOf(query, 'createdAt');
        const found = await app.reads.read(principal.accountId, ({ db }) =>
          listJobs(
            db,
            caller.id,
            {
              ...(listFilterOf(query, 'state') ? { states: listFilterOf(query, 'state') } : {}),
              ...(listFilterOf(query, 'type') ? { types: listFilterOf(query, 'type') } : {}),
              ...(listFilterOf(query, 'parent') ? { parentIds: listFilterOf(query, 'parent') } : {}),
              ...(created.after || created.strictly_after
                ? { createdAfter: (created.after ?? created.strictly_after) as Date }
                : {}),
              ...(created.before || created.strictly_before
                ? { createdBefore: (created.before ?? created.strictly_before) as Date }
                : {}),
            },
            query,
          ),
        );
        return { ...found, page: query.page, limit: query.limit };
      },
    })
    .action({
      method: 'post',
      path: '',
      on: 'collection',
      summary: 'Start a batch recompute (staff only): records, statistics or thumbnails of one user or all',
      description:
        'Body `{"type": "records_recompute" | "statistics_rebuild" | "thumbnails_rebuild", "params": {"user": "<ldid>" | "all": true, "sport": [121], "since": "2024-01-01", "until": "2025-01-01"}}`: the options of `npm run records:recompute`. Answers 202 with the Job (`Location` names it), owned by the caller: the workers enqueue the work of the scope, then the job stays `running` with its `progress` until that work is done. A caller without the staff role (and the `admin` scope) gets 403; bad params a 422 naming `params.<option>`. See docs/tracking-records.md, "Recomputing".',
      body: jobCreateBody,
      status: 202,
      response: serializer.itemSchema(jobSchema),
      idempotent: true,
      errors: { 403: 'Not a staff account' },
      handler: async ({ body, caller, principal }) =>
        jobAccepted(
          app,
          await startBatchJob(db, { userId: caller.id, staff: hasRole(principal, 'staff') }, body.type, body.params),
        ),
    })
    .get({
      summary: 'One job of the caller: its state, progress, result or error',
      handler: ({ params, caller }) => findJob(db, caller.id, params.id),
    })
    .update({
      summary: 'Cancel a job of the caller that has not started (`{"state": "cancelled"}`)',
      description:
        'The one change a job takes is `state: cancelled`, while it is `pending` (409 once it runs or has ended); any other value of `state` is a 422. Other members sent back are ignored (read-only).',
      body: jobUpdateBody,
      errors: { 409: 'The job is running or has ended' },
      handler: async ({ params, body, caller }) => {
        if (body.state !== 'cancelled')
          throw unprocessable([{ path: 'body.state', message: 'the one change a job takes is "cancelled"' }]);
        return cancelJob(db, caller.id, params.id);
      },
    });
}
