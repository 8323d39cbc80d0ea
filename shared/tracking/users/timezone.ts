/** Longest zone name kept (the longest IANA name is about 30 characters). */
export const MAX_TIMEZONE_LENGTH = 64;

// A name, not an offset: Intl also takes `+01:00`, which has no daylight saving rules.
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]*$/;

/**
 * The canonical spelling of an IANA time zone name the platform's ICU data knows (`europe/paris`
 * → `Europe/Paris`, `US/Eastern` → `America/New_York`, `Etc/UTC` → `UTC`), or undefined when it
 * knows no such zone. Offsets such as `+01:00` are not zone names.
 */
export function canonicalTimezone(name: string): string | undefined {
  if (name.length > MAX_TIMEZONE_LENGTH || !ZONE_NAME.test(name)) return undefined;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** Why `name` is not a time zone the user may set, or undefined when it is one. */
export function timezoneProblem(name: string): string | undefined {
  return canonicalTimezone(name) === undefined
    ? `"${name.slice(0, MAX_TIMEZONE_LENGTH)}" is not an IANA time zone name (e.g. Europe/Paris, America/New_York, UTC)`
    : undefined;
}
