/**
 * An activity's content as the tracking code works on it, independent of JSON, files and storage:
 * what the JSON body, the GPX/TCX/FIT importers and the database reader produce, and what the
 * exporters, the records computation and the thumbnails read. Streams are columnar typed arrays.
 */
export interface ActivityContent {
  sportId: number;
  name: string | null;
  startdate: Date;
  /** Total seconds. */
  duration: number;
  /** Datatype id to the value for the whole activity (the `dataSummaries`). */
  summaries: Map<number, number>;
  datastream: Datastream;
  track: Track;
}

/** Samples keyed by elapsed second; one channel per datatype, aligned on `elapsed`. */
export interface Datastream {
  /** Elapsed seconds since the start, strictly ascending integers. */
  elapsed: Int32Array;
  /** Datatype id to its values; NaN where a sample has no value of that datatype. */
  channels: Map<number, Float64Array>;
}

/** GPS points keyed by elapsed second. */
export interface Track {
  /** Elapsed seconds since the start, strictly ascending integers. */
  elapsed: Int32Array;
  latitude: Float64Array;
  longitude: Float64Array;
  /** Metres; NaN where unknown. */
  elevation: Float64Array;
}

/** The datatypes the tracking code reads or writes by meaning (ids of the seeded referential). */
export const DATATYPE = {
  HR_CURRENT: 1,
  HR_MAX: 3,
  HR_AVG: 4,
  DISTANCE: 5,
  /** m/h, as the referential's unit says. */
  SPEED_CURRENT: 6,
  SPEED_MAX: 7,
  SPEED_AVG: 9,
  CADENCE_CURRENT: 10,
  ELEVATION_CURRENT: 14,
  ELEVATION_MAX: 15,
  ELEVATION_MIN: 16,
  ASCENT: 18,
  DESCENT: 19,
  /** 1 on the sample where a lap ends. */
  LAP: 20,
  CALORIES: 23,
  DURATION: 24,
  RPM_CURRENT: 100,
  POWER_CURRENT: 178,
} as const;

export const emptyDatastream = (): Datastream => ({ elapsed: new Int32Array(0), channels: new Map() });

export const emptyTrack = (): Track => ({
  elapsed: new Int32Array(0),
  latitude: new Float64Array(0),
  longitude: new Float64Array(0),
  elevation: new Float64Array(0),
});
