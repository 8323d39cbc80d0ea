/** How the tracking service writes instants: ISO 8601 in UTC with an explicit `+00:00` offset. */
export function formatDateTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, '+00:00');
}
