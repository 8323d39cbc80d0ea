import type { SoakUser } from './credentials.ts';
import type { RouteStats } from './route-stats.ts';
import type { SoakSettings } from './settings.ts';

/** What every phase of the soak works with: the running API and the data made for the run. */
export interface SoakWorld {
  apiUrl: string;
  settings: SoakSettings;
  /** Users that post, list and read activities and records. */
  users: SoakUser[];
  /** Users that ask for exports: one per loop, so no two exports of one user overlap (409). */
  exporters: SoakUser[];
  staff: SoakUser;
  /** Search centres `[lng, lat]`, drawn by population like the places. */
  centres: [number, number][];
  /** The activities of each user (by ldid) known so far: the reads pick among them. */
  activityIds: Map<string, string[]>;
  /** A new POST /v2/activities body of a user (IRI). */
  activityBody: (userIri: string) => string;
}

/** What a phase reports: its lines (a RouteStats's table, for one) and its errors. */
export type PhaseResult = Pick<RouteStats, 'report' | 'errors'>;

/** One phase of the soak: requests against the world, in its own table. */
export interface Phase {
  name: string;
  /** One line on what it sends, printed under its name. */
  describe: (world: SoakWorld) => string;
  run: (world: SoakWorld) => Promise<PhaseResult>;
}
