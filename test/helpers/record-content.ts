import datatypes from '../../shared/referentials/datatypes.json' with { type: 'json' };
import { type ActivityContent, DATATYPE, emptyDatastream, emptyTrack } from '../../shared/tracking/activities/data.ts';
import type { RecordRules } from '../../shared/tracking/records/best-efforts.ts';
import type { DistanceSeries } from '../../shared/tracking/records/distance-series.ts';
import { DEFAULT_RECORDS_SETTINGS, type SportFamily } from '../../shared/tracking/records/settings.ts';

// Activity contents, distance series and rules built by hand for the records tests.

export function series(time: number[], distance: number[]): DistanceSeries {
  let fastest = 0;
  for (let i = 1; i < time.length; i++)
    fastest = Math.max(
      fastest,
      ((distance[i] as number) - (distance[i - 1] as number)) / ((time[i] as number) - (time[i - 1] as number)),
    );
  return { time: Int32Array.from(time), distance: Float64Array.from(distance), fastest };
}

export function content(parts: Partial<ActivityContent> = {}): ActivityContent {
  return {
    sportId: 121,
    name: null,
    startdate: new Date('2026-01-01T08:00:00Z'),
    duration: 0,
    summaries: new Map(),
    datastream: emptyDatastream(),
    track: emptyTrack(),
    ...parts,
  };
}

export const stream = (elapsed: number[], distance: number[]) => ({
  elapsed: Int32Array.from(elapsed),
  channels: new Map([[DATATYPE.DISTANCE as number, Float64Array.from(distance)]]),
});

/** A track heading north from (lat0, lon0) by `steps[i]` metres at second `elapsed[i]`. */
export function northTrack(elapsed: number[], steps: number[], lat0 = 45, lon0 = 6) {
  const degPerMetre = 180 / Math.PI / 6_371_008.8;
  let lat = lat0;
  const latitude = steps.map((s) => {
    lat += s * degPerMetre;
    return lat;
  });
  return {
    elapsed: Int32Array.from(elapsed),
    latitude: Float64Array.from(latitude),
    longitude: new Float64Array(elapsed.length).fill(lon0),
    elevation: new Float64Array(elapsed.length).fill(Number.NaN),
  };
}

export const recordWays = new Map(datatypes.map((d) => [d.id, d.recordWay]));
export const running = DEFAULT_RECORDS_SETTINGS.families.running as SportFamily;
export const rules = (family: SportFamily | null = running): RecordRules => ({ recordWays, family });
