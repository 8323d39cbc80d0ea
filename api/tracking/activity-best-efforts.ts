import { z } from 'zod';
import { iri, TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import {
  activityBestEfforts,
  effortDistance,
  effortName,
  RANKED_EFFORTS,
  type RankedEffort,
} from '../../shared/tracking/records/best-effort-ranks.ts';
import type { AppContext } from '../context.ts';
import type { HydraView } from '../http/formats/format.ts';
import type { ApiRouter } from '../http/route.ts';
import { ACTIVITIES_PATH } from './activity-schemas.ts';
import { type FieldsText, listText, num, orNull, str } from './list-text.ts';
import { dateTimeOut } from './schemas.ts';
import { idParams, trackingResource } from './tracking-resource.ts';

/**
 * GET /v2/activities/{id}/best_efforts (docs/tracking-records.md, "Best efforts of one activity"):
 * what the records job found in one activity, ranked among the user's efforts (Strava's
 * `best_efforts` with `pr_rank`). Reading and ranking are shared/tracking/records/best-effort-ranks.ts.
 */

const effortSchema = z
  .object({
    activity: z.string().meta({ format: 'iri-reference', example: '/v2/activities/0123456789abcdef0123456789abcdef' }),
    sport: z.string().meta({ format: 'iri-reference', example: '/v2/sports/121' }),
    type: z.string().meta({
      description:
        '`distance.<meters>m` (fastest time over that distance) or `all` (the summary value of a record datatype)',
      example: 'distance.5000m',
    }),
    name: z.string().nullable().meta({ description: 'the distance in words; null for `all`', example: '5 km' }),
    distance: z.number().int().nullable().meta({ description: 'metres; null for `all`', example: 5000 }),
    datatype: z.string().meta({ format: 'iri-reference', example: '/v2/datatypes/24' }),
    value: z.number().meta({ description: "in the datatype's unit (seconds for a distance)", example: 1490.5 }),
    elapsedTime: z
      .number()
      .nullable()
      .meta({ description: 'seconds over the distance (the value); null for `all`', example: 1490.5 }),
    startdate: dateTimeOut.meta({ description: "the activity's start" }),
    rank: z
      .number()
      .int()
      .min(1)
      .max(RANKED_EFFORTS)
      .nullable()
      .meta({
        description: `1 when this is the user's record of the sport, type and datatype, up to ${RANKED_EFFORTS}; null below`,
      }),
  })
  .meta({ id: 'ActivityBestEffort' });

export const effortView: HydraView<RankedEffort, typeof effortSchema> = {
  type: 'ActivityBestEffort',
  path: `${TRACKING_PREFIX}${ACTIVITIES_PATH}`,
  id: (e) => `${e.activityId}/best_efforts#${e.type}-${e.datatypeId}`,
  // A fragment of the collection's document: an effort has no address of its own.
  iri: (e) => `${iri('activities', e.activityId)}/best_efforts#${e.type}-${e.datatypeId}`,
  fields: (e) => {
    const distance = effortDistance(e.type);
    return {
      activity: iri('activities', e.activityId),
      sport: iri('sports', e.sportId),
      type: e.type,
      name: distance === null ? null : effortName(distance),
      distance,
      datatype: iri('datatypes', e.datatypeId),
      value: e.value,
      elapsedTime: distance === null ? null : e.value,
      startdate: e.startdate,
      rank: e.rank,
    };
  },
};

/** effortView's fields written as JSON text (api/tracking/list-text.ts). */
export const effortFields: FieldsText<RankedEffort> = (e) => {
  const distance = effortDistance(e.type);
  return `{"activity":${str(iri('activities', e.activityId))},"sport":${str(iri('sports', e.sportId))},"type":${str(e.type)},"name":${orNull(distance, (d) => str(effortName(d)))},"distance":${orNull(distance, num)},"datatype":${str(iri('datatypes', e.datatypeId))},"value":${num(e.value)},"elapsedTime":${distance === null ? 'null' : num(e.value)},"startdate":${str(e.startdate)},"rank":${orNull(e.rank, num)}}`;
};

export function activityBestEffortsResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  trackingResource(router, app, {
    path: `${ACTIVITIES_PATH}/:id/best_efforts`,
    params: idParams,
    itemPath: '',
    item: effortSchema,
    hydra: effortView,
    notFound: 'No such activity (or not yours)',
  }).list({
    summary: "An activity's best efforts, with their rank among the user's",
    description: `What the records job found in the activity (after each write; none until it has run): its fastest time over each standard distance of its sport's family it covers (\`distance.<m>m\`, datatype 24, seconds) and its summary values of the record datatypes (\`all\`). Distances first, shortest first. \`rank\`: the effort's place among the user's efforts of the same sport, type and datatype, the records' order (best value, then earliest start, then activity id), so 1 is the user's record; given up to ${RANKED_EFFORTS}, null below (Strava's \`pr_rank\`). Every effort on one page.`,
    representations: listText(app, effortView, [], effortFields),
    handler: ({ params, caller }) => activityBestEfforts(db, caller.id, params.id),
  });
}
