import { ImportError } from './import-error.ts';
import { IMPORT_LIMITS } from './limits.ts';

/**
 * The points an importer reads (GPX, TCX, FIT), kept column by column in file order until
 * activity-builder.ts makes an activity of them.
 */

/** One point as a file gives it. Units: degrees, m, bpm, rpm or steps/min, W, m/s, m. */
export interface PointValues {
  latitude?: number;
  longitude?: number;
  elevation?: number;
  heartRate?: number;
  cadence?: number;
  power?: number;
  speed?: number;
  distance?: number;
}

const FIELDS = ['latitude', 'longitude', 'elevation', 'heartRate', 'cadence', 'power', 'speed', 'distance'] as const;
type Field = (typeof FIELDS)[number];
/** The fields merged one by one (a position is merged as a pair). */
export const VALUE_FIELDS = ['elevation', 'heartRate', 'cadence', 'power', 'speed', 'distance'] as const;
export type ValueField = (typeof VALUE_FIELDS)[number];

/** The points of a file, column by column, in file order. */
export class PointCollector {
  readonly times: number[] = [];
  readonly columns: Record<Field, number[]> = {
    latitude: [],
    longitude: [],
    elevation: [],
    heartRate: [],
    cadence: [],
    power: [],
    speed: [],
    distance: [],
  };
  readonly lapEnds: number[] = [];
  /** Indexes of the points that begin a new track or segment (a jump from the point before is not ground covered). */
  readonly breaks: number[] = [];
  untimed = 0;

  /** A point at `time` (epoch ms; NaN when the file gives none, and then it is only counted). */
  add(time: number, values: PointValues): void {
    if (Number.isNaN(time)) {
      this.untimed++;
      return;
    }
    if (this.times.length >= IMPORT_LIMITS.maxSamples * 4) {
      throw new ImportError('over-limit', `the file has more than ${IMPORT_LIMITS.maxSamples * 4} timed points`);
    }
    this.times.push(time);
    for (const f of FIELDS) this.columns[f].push(values[f] ?? Number.NaN);
  }

  /** The next point added begins a new track or segment. */
  breakHere(): void {
    if (this.times.length && this.breaks.at(-1) !== this.times.length) this.breaks.push(this.times.length);
  }

  /** A lap ends at `time` (epoch ms). */
  lapEndsAt(time: number): void {
    if (!Number.isNaN(time)) this.lapEnds.push(time);
  }

  get size(): number {
    return this.times.length;
  }
}
