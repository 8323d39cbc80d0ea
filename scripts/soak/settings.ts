import { benchDatabaseUrl, envNumber } from '../../bench/harness.ts';

/** The soak's settings, from the environment (README, "Soak"). */
export interface SoakSettings {
  /** Length of the mix, in seconds. */
  durationS: number;
  /** Requests in flight at once: closed loops, each waiting for its answer before the next. */
  concurrency: number;
  places: number;
  partners: number;
  /** Users posting and reading activities (the exporting users are others, one per loop). */
  users: number;
  /** Length of each posted activity at 1 Hz: its number of samples and GPS points. */
  activitySeconds: number;
  /** Longest wait, after the phases, for the workers to finish every outbox row. */
  drainS: number;
  /** A request without its answer this long is an error. */
  requestTimeoutMs: number;
  /** Requests generated from /openapi.json after the mix (scripts/soak/generated-phase.ts). */
  generatedRequests: number;
  /** The generated requests' seed (SOAK_SEED), random when unset. */
  seed: number | undefined;
  databaseUrl: string;
}

export function soakSettings(): SoakSettings {
  const int = (name: string, fallback: number, min: number) => Math.max(min, Math.round(envNumber(name, fallback)));
  return {
    durationS: envNumber('SOAK_DURATION_S', 300),
    concurrency: int('SOAK_CONCURRENCY', 16, 1),
    places: int('SOAK_PLACES', 5_000, 1),
    partners: int('SOAK_PARTNERS', 300, 1),
    users: int('SOAK_USERS', 8, 1),
    activitySeconds: int('SOAK_ACTIVITY_SECONDS', 2_400, 60),
    drainS: envNumber('SOAK_DRAIN_S', 60),
    requestTimeoutMs: int('SOAK_REQUEST_TIMEOUT_S', 60, 1) * 1000,
    generatedRequests: int('SOAK_GENERATED_REQUESTS', 10_000, 0),
    seed: process.env.SOAK_SEED ? int('SOAK_SEED', 0, 0) : undefined,
    databaseUrl: benchDatabaseUrl('SOAK_DATABASE_URL', 'sports_soak'),
  };
}
