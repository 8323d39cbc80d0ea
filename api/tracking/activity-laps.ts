import { z } from 'zod';
import { findActivityContent } from '../../shared/tracking/activities/content-read.ts';
import { computeLaps, type Lap } from '../../shared/tracking/activities/laps.ts';
import { movingRuleFor } from '../../shared/tracking/activities/moving-store.ts';
import { formatDateTime } from '../../shared/tracking/dates.ts';
import { iri, TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import type { AppContext } from '../context.ts';
import type { HydraView } from '../http/formats/format.ts';
import type { ApiRouter } from '../http/route.ts';
import { ACTIVITIES_PATH } from './activity-schemas.ts';
import { type FieldsText, listText, num, orNull, str } from './list-text.ts';
import { dateTimeOut } from './schemas.ts';
import { idParams, trackingResource } from './tracking-resource.ts';

/**
 * GET /v2/activities/{id}/laps (docs/tracking-activities.md, "Laps"): the activity cut at its lap
 * markers (datatype 20). The rule is shared/tracking/activities/laps.ts.
 */

export interface ActivityLap extends Lap {
  activityId: string;
  startdate: Date;
}

const lapSchema = z
  .object({
    activity: z.string().meta({ format: 'iri-reference', example: '/v2/activities/0123456789abcdef0123456789abcdef' }),
    index: z.number().int().min(1).meta({ description: '1 for the first lap', example: 1 }),
    startdate: dateTimeOut.meta({ description: 'when the lap begins' }),
    start: z.number().int().meta({ description: "seconds since the activity's start when the lap begins", example: 0 }),
    duration: z.number().int().meta({ description: 'seconds, pauses included', example: 420 }),
    movingTime: z.number().int().meta({
      description: "seconds in motion under the sport's rule (as the activity's movingTime), over the lap alone",
      example: 412,
    }),
    distance: z.number().nullable().meta({
      description: 'metres covered, from the distance stream (else the GPS track); null without either',
      example: 1000.4,
    }),
    dataSummaries: z.record(z.string(), z.number()).meta({
      description:
        "datatype id to the lap's value, as an activity's dataSummaries: 24 duration, 5 distance, 9 and 7 average and top speed (m/h), 4 and 3 average and maximum heart rate, 17, 15 and 16 average, maximum and minimum elevation, 18 and 19 ascent and descent, 13 and 11 cadence or 103 and 101 RPM average and maximum, 180 and 179 power average and maximum; only those the lap's samples give",
      example: { '3': 171, '4': 158.2, '5': 1000.4, '7': 14400, '9': 8574.86, '24': 420 },
    }),
  })
  .meta({ id: 'ActivityLap' });

export const lapView: HydraView<ActivityLap, typeof lapSchema> = {
  type: 'ActivityLap',
  path: `${TRACKING_PREFIX}${ACTIVITIES_PATH}`,
  id: (l) => `${l.activityId}/laps#${l.index}`,
  // A fragment of the collection's document: a lap has no address of its own.
  iri: (l) => `${iri('activities', l.activityId)}/laps#${l.index}`,
  fields: (l) => ({
    activity: iri('activities', l.activityId),
    index: l.index,
    startdate: formatDateTime(l.startdate),
    start: l.start,
    duration: l.duration,
    movingTime: l.movingTime,
    distance: l.distance,
    dataSummaries: Object.fromEntries(l.summaries),
  }),
};

/** Datatype ids to values as a JS object writes them: integer keys ascending. */
const summariesText = (summaries: Map<number, number>) =>
  `{${[...summaries]
    .sort((a, b) => a[0] - b[0])
    .map(([id, value]) => `"${id}":${num(value)}`)
    .join(',')}}`;

/** lapView's fields written as JSON text (api/tracking/list-text.ts). */
export const lapFields: FieldsText<ActivityLap> = (l) =>
  `{"activity":${str(iri('activities', l.activityId))},"index":${num(l.index)},"startdate":${str(formatDateTime(l.startdate))},"start":${num(l.start)},"duration":${num(l.duration)},"movingTime":${num(l.movingTime)},"distance":${orNull(l.distance, num)},"dataSummaries":${summariesText(l.summaries)}}`;

export function activityLapsResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  trackingResource(router, app, {
    path: `${ACTIVITIES_PATH}/:id/laps`,
    params: idParams,
    itemPath: '',
    item: lapSchema,
    hydra: lapView,
    notFound: 'No such activity (or not yours)',
  }).list({
    summary: "An activity's laps",
    representations: listText(app, lapView, [], lapFields),
    description:
      "The activity cut at its lap markers (datatype 20 = 1 on the sample a lap ends at: what TCX laps, FIT lap messages and GPX segments import as, and what a JSON create may send), in order. Laps follow each other: each begins where the one before ended (the first at the activity's start) and the last runs to the activity's end, so time between two laps of a file belongs to the next one (a pause of its moving time). An activity without markers is one lap. Each lap: its start (date-time and elapsed seconds), duration, moving time under the sport's rule, distance, and its summaries by datatype (averages and maxima of heart rate, speed, cadence, power and elevation, ascent and descent) computed from its samples as the activity's are. Every lap on one page.",
    handler: async ({ params, caller }) => {
      const { content } = await findActivityContent(db, caller.id, params.id);
      const laps = computeLaps(content, await movingRuleFor(db, content.sportId));
      const start = content.startdate.getTime();
      return laps.map(
        (l): ActivityLap => ({ ...l, activityId: params.id, startdate: new Date(start + l.start * 1000) }),
      );
    },
  });
}
