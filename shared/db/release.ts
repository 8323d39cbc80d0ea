import { migrations } from './migrations/index.ts';

/** The last migration this code knows: what a process of this release expects of the schema. */
export const SCHEMA_LEVEL = Object.keys(migrations).sort().at(-1) ?? 'none';

/**
 * The `application_name` of a process's pool: `sports-api 0066_account_sessions`. During a
 * rolling deploy, pg_stat_activity (or PgBouncer's SHOW CLIENTS) then tells which releases still
 * run, before a contract migration drops what an older one reads (docs/operations.md,
 * "Upgrades without downtime").
 */
export function releaseName(role: 'api' | 'worker'): string {
  return `sports-${role} ${SCHEMA_LEVEL}`;
}
