/** How the tracking service writes instants: ISO 8601 in UTC with an explicit `+00:00` offset. */
export function formatDateTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

// One formatter per zone: building one costs far more than formatting with it.
const zoned = new Map<string, Intl.DateTimeFormat>();

/**
 * An instant as the wall clock of `timezone` (an IANA name) shows it, with that zone's offset
 * then: `2026-03-14T19:30:00+01:00`. Seconds are whole, as formatDateTime's.
 */
export function formatDateTimeIn(date: Date, timezone: string): string {
  let f = zoned.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      calendar: 'gregory',
      numberingSystem: 'latn',
    });
    zoned.set(timezone, f);
  }
  const whole = new Date(Math.floor(date.getTime() / 1000) * 1000);
  const p = Object.fromEntries(f.formatToParts(whole).map((x) => [x.type, x.value]));
  const local = Date.UTC(
    Number(p.year),
    Number(p.month) - 1,
    Number(p.day),
    Number(p.hour),
    Number(p.minute),
    Number(p.second),
  );
  const offset = Math.round((local - whole.getTime()) / 60_000);
  const abs = Math.abs(offset);
  const sign = offset < 0 ? '-' : '+';
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(abs % 60).padStart(2, '0');
  return `${String(p.year).padStart(4, '0')}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}${sign}${hh}:${mm}`;
}

/**
 * The SQL that writes a `timestamptz` expression as formatDateTime does (the seconds cut, not
 * rounded, as toISOString then the cut do), so a read sends the text the API answers.
 */
export function sqlDateTime(expression: string): string {
  return `to_char(${expression} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')`;
}
