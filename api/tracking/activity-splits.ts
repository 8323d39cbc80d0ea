import { z } from 'zod';
import { DATATYPE } from '../../shared/tracking/activities/data.ts';
import { storedTrack } from '../../shared/tracking/activities/moving-store.ts';
import {
  computeSplits,
  elevationFromTrack,
  SPLIT_UNITS,
  type Split,
  type SplitUnit,
} from '../../shared/tracking/activities/splits.ts';
import { iri, TRACKING_PREFIX } from '../../shared/tracking/iri.ts';
import { readActivityStreams } from '../../shared/tracking/streams/read.ts';
import type { AppContext } from '../context.ts';
import type { HydraView } from '../http/formats/format.ts';
import type { ApiRouter } from '../http/route.ts';
import { ACTIVITIES_PATH } from './activity-schemas.ts';
import { type FieldsText, listText, num, orNull, str } from './list-text.ts';
import { idParams, trackingResource } from './tracking-resource.ts';

/**
 * GET /v2/activities/{id}/splits (docs/tracking-activities.md, "Splits"): the activity cut every
 * kilometre or mile of its distance stream. The rule is shared/tracking/activities/splits.ts.
 */

const UNITS = Object.keys(SPLIT_UNITS) as SplitUnit[];

export interface UnitSplit extends Split {
  activityId: string;
  unit: SplitUnit;
}

const splitSchema = z
  .object({
    activity: z.string().meta({ format: 'iri-reference', example: '/v2/activities/0123456789abcdef0123456789abcdef' }),
    unit: z.enum(UNITS),
    index: z.number().int().min(1).meta({ description: '1 for the first split', example: 1 }),
    distance: z.number().meta({
      description: 'metres covered: 1000 (km) or 1609.344 (mile), less for the last split',
      example: 1000,
    }),
    start: z.number().meta({ description: "seconds since the activity's start when the split begins", example: 0 }),
    elapsedTime: z.number().meta({ description: 'seconds the split took', example: 301.4 }),
    pace: z.number().meta({
      description: 'seconds per unit (per km or per mile); the last split scaled up to a whole unit',
      example: 301.4,
    }),
    elevationChange: z
      .number()
      .nullable()
      .meta({ description: 'metres, elevation at the end minus at the start; null without elevation', example: 4.2 }),
    averageHeartRate: z
      .number()
      .nullable()
      .meta({ description: "mean of the split's heart-rate samples (bpm); null when it has none", example: 148.3 }),
  })
  .meta({ id: 'ActivitySplit' });

/** Tenths: interpolated times and means carry no more precision than that. */
const tenth = (v: number) => Math.round(v * 10) / 10;
const tenthOrNull = (v: number | null) => (v === null ? null : tenth(v));

export const splitView: HydraView<UnitSplit, typeof splitSchema> = {
  type: 'ActivitySplit',
  path: `${TRACKING_PREFIX}${ACTIVITIES_PATH}`,
  id: (s) => `${s.activityId}/splits?unit=${s.unit}#${s.index}`,
  // A fragment of the collection's document: a split has no address of its own.
  iri: (s) => `${iri('activities', s.activityId)}/splits?unit=${s.unit}#${s.index}`,
  fields: (s) => ({
    activity: iri('activities', s.activityId),
    unit: s.unit,
    index: s.index,
    // A whole kilometre or mile is given exactly, a partial one to the tenth.
    distance: s.distance === SPLIT_UNITS[s.unit] ? s.distance : tenth(s.distance),
    start: tenth(s.start),
    elapsedTime: tenth(s.elapsedTime),
    pace: tenth(s.pace),
    elevationChange: tenthOrNull(s.elevationChange),
    averageHeartRate: tenthOrNull(s.averageHeartRate),
  }),
};

const tenthText = (v: number | null) => orNull(v, (x) => num(tenth(x)));

/** splitView's fields written as JSON text (api/tracking/list-text.ts). */
export const splitFields: FieldsText<UnitSplit> = (s) =>
  `{"activity":${str(iri('activities', s.activityId))},"unit":${str(s.unit)},"index":${num(s.index)},"distance":${num(s.distance === SPLIT_UNITS[s.unit] ? s.distance : tenth(s.distance))},"start":${tenthText(s.start)},"elapsedTime":${tenthText(s.elapsedTime)},"pace":${tenthText(s.pace)},"elevationChange":${tenthText(s.elevationChange)},"averageHeartRate":${tenthText(s.averageHeartRate)}}`;

export const splitsQuery = z.object({
  unit: z.enum(UNITS).default('km').meta({ description: 'km (the default) or mile' }),
});

export function activitySplitsResource(router: ApiRouter, app: AppContext): void {
  const { db } = app;
  trackingResource(router, app, {
    path: `${ACTIVITIES_PATH}/:id/splits`,
    params: idParams,
    itemPath: '',
    item: splitSchema,
    hydra: splitView,
    notFound: 'No such activity (or not yours)',
  }).list({
    summary: "An activity's splits per kilometre or per mile",
    description:
      "The activity cut every kilometre (`unit=km`, the default) or mile (`unit=mile`) of its distance stream (datatype 5), in order. Each split: its distance (the unit's length, less for the last one, which ends at the last sample with a distance), its start and time in seconds, its pace in seconds per unit, its elevation change (datatype 14, else the GPS track's elevations; end minus start; null without elevation) and its average heart rate (datatype 1, the mean of the samples inside it; null when none). The time and elevation at a boundary are interpolated linearly between the samples on either side. An activity without a distance stream has no splits (an empty collection). Every split on one page.",
    query: splitsQuery,
    representations: listText(app, splitView, Object.keys(splitsQuery.shape), splitFields),
    handler: async ({ params, query, caller }) => {
      const streams = await readActivityStreams(db, caller.id, params.id, {
        datatypes: [DATATYPE.HR_CURRENT, DATATYPE.DISTANCE, DATATYPE.ELEVATION_CURRENT],
        resolution: 'full',
      });
      // Without an elevation channel, the track's elevations (readActivityStreams checked the owner).
      const elevation =
        streams.channels.get(DATATYPE.ELEVATION_CURRENT) ??
        elevationFromTrack(streams.elapsed, await storedTrack(db, params.id));
      const splits = computeSplits(
        {
          elapsed: streams.elapsed,
          distance: streams.channels.get(DATATYPE.DISTANCE),
          heartRate: streams.channels.get(DATATYPE.HR_CURRENT),
          elevation,
        },
        query.unit,
      );
      return splits.map((s): UnitSplit => ({ ...s, activityId: params.id, unit: query.unit }));
    },
  });
}
