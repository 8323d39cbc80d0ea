import { z } from 'zod';
import { pacedStream } from '../../shared/runtime/paced-stream.ts';
import { jsonWithColumnsChunks } from '../../shared/tracking/activities/json.ts';
import { iri, TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import { RESOLUTIONS, type Resolution } from '../../shared/tracking/streams/downsample.ts';
import { type ActivityStreams, readActivityStreams } from '../../shared/tracking/streams/read.ts';
import type { AppContext } from '../context.ts';
import type { HydraView } from '../http/formats/format.ts';
import type { ApiRouter } from '../http/route.ts';
import { ACTIVITIES_PATH } from './activity-schemas.ts';
import { integerRefOf, listFilterOf, listFilterShape } from './schemas.ts';
import { trackingResource } from './tracking-resource.ts';

/**
 * GET /v2/activities/{id}/streams (docs/tracking-activities.md, "Streams by datatype and
 * resolution"): some channels of an activity's datastream, downsampled for a chart, as columns.
 * The reading and the downsampling are shared/tracking/streams/.
 */

const RESOLUTION_NAMES = Object.keys(RESOLUTIONS) as Resolution[];

const streamsSchema = z
  .object({
    activity: z.string().meta({ format: 'iri-reference', example: '/v2/activities/0123456789abcdef0123456789abcdef' }),
    resolution: z.enum(RESOLUTION_NAMES),
    originalSize: z.number().int().meta({ description: 'samples stored in the datastream' }),
    size: z.number().int().meta({ description: 'samples answered (the length of `elapsed` and of each channel)' }),
    elapsed: z.array(z.number().int()).meta({ description: 'elapsed seconds of the samples answered, ascending' }),
    values: z.record(z.string(), z.array(z.number().nullable())).meta({
      description: 'datatype id (string key) to its values at those seconds, null where it has none',
      example: { '1': [92, 141, 150], '5': [0, 1000, 2000] },
    }),
  })
  .meta({
    id: 'ActivityStreams',
    description:
      "An activity's datastream channels at a resolution, as columns: GET /v2/activities/{id}/streams?datatypes[]=1&resolution=low",
  });

/** The members before the columns. */
const streamsHead = (s: ActivityStreams) => ({
  activity: iri('activities', s.activityId),
  resolution: s.resolution,
  originalSize: s.originalSize,
  size: s.elapsed.length,
});

const streamsView: HydraView<ActivityStreams, typeof streamsSchema> = {
  type: 'ActivityStreams',
  path: `${TRACKING_PREFIX}${ACTIVITIES_PATH}`,
  id: (s) => `${s.activityId}/streams`,
  fields: (s) => ({
    ...streamsHead(s),
    elapsed: Array.from(s.elapsed),
    values: Object.fromEntries([...s.channels].map(([d, values]) => [String(d), Array.from(values)])),
  }),
};

const streamsQuery = z.object({
  ...listFilterShape('datatypes', integerRefOf('datatypes')),
  resolution: z
    .enum(RESOLUTION_NAMES)
    .default('full')
    .meta({
      description: `samples kept at most: low ${RESOLUTIONS.low}, medium ${RESOLUTIONS.medium}, high ${RESOLUTIONS.high}, full every one (the default)`,
    }),
});

/**
 * The document as JSON-LD (`@context`, `@id`, `@type` first) or plain JSON; NaN is written null.
 * The columns are written from their typed arrays while they are sent, paced between turns of the
 * event loop (every sample of the largest activity is several MB).
 */
const streamsDocument = (jsonLd: boolean) => (result: unknown) => {
  // What the handler below returns (an action's representations are untyped).
  const s = result as ActivityStreams;
  const fields = streamsHead(s);
  const id = `${iri('activities', s.activityId)}/streams`;
  const head = jsonLd
    ? {
        '@context': `${TRACKING_PREFIX}/contexts/${streamsView.type}`,
        '@id': id,
        '@type': 'ActivityStreams',
        ...fields,
      }
    : fields;
  return pacedStream(jsonWithColumnsChunks(head, { elapsed: s.elapsed, values: s.channels }));
};

export function activityStreamsResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  trackingResource(router, app, {
    path: ACTIVITIES_PATH,
    item: streamsSchema,
    hydra: streamsView,
    notFound: 'No such activity (or not yours)',
  }).action({
    method: 'get',
    path: '/streams',
    summary: "An activity's datastream channels, by datatype and at a resolution, as columns",
    description: `\`datatypes\` / \`datatypes[]\` (IRIs or bare ids; repeat it or send several): the channels to answer, every channel of the activity when absent. A datatype the activity has no samples of is left out of \`values\`; one that does not exist is a 422. \`resolution\`: ${RESOLUTION_NAMES.join(', ')} (at most ${RESOLUTIONS.low}, ${RESOLUTIONS.medium}, ${RESOLUTIONS.high} samples, or every one; default full). Below full, the samples kept are chosen by Largest-Triangle-Three-Buckets on all the requested channels together, so every channel is answered at the same elapsed seconds and keeps its peaks.`,
    query: streamsQuery,
    response: streamsSchema,
    representations: { 'application/ld+json': streamsDocument(true), 'application/json': streamsDocument(false) },
    handler: ({ params, query, caller }) =>
      readActivityStreams(
        db,
        caller.id,
        params.id,
        { datatypes: listFilterOf<number>(query, 'datatypes'), resolution: query.resolution },
        query['datatypes[]'] ? 'query.datatypes[]' : 'query.datatypes',
      ),
  });
}
