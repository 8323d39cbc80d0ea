import type { Datastream, Track } from '../activities/data.ts';

/**
 * The JSON body of an activity create (POST /v2/activities), read from its bytes: the streams
 * (`datastream`, `locations`: up to hundreds of thousands of samples) become columns here, and
 * only the rest of the body, a few small members, is handed on. The API runs this on its event
 * loop for bodies up to 1 MB (a 1-hour activity at 1 Hz is 0.6 MB) and in the import threads
 * (shared/tracking/imports/pool.ts) for larger ones: a 24-hour body would hold the event loop for
 * a second.
 */
export interface ActivityBody {
  /** The body without `datastream` and `locations`; undefined for an empty body. */
  body: unknown;
  datastream: Datastream;
  track: Track;
}
