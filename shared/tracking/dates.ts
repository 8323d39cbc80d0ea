/** How the tracking service writes instants: ISO 8601 in UTC with an explicit `+00:00` offset. */
export function formatDateTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

/**
 * The SQL that writes a `timestamptz` expression as formatDateTime does (the seconds cut, not
 * rounded, as toISOString then the cut do), so a read sends the text the API answers.
 */
export function sqlDateTime(expression: string): string {
  return `to_char(${expression} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')`;
}
