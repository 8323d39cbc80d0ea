/**
 * The periods of the statistics (docs/tracking-statistics.md): weeks (ISO, starting on Monday),
 * months and years, cut in the user's time zone. A period is named by its first local day,
 * `YYYY-MM-DD`.
 */

export const SUMUP_TYPES = ['week', 'month', 'year'] as const;
export type SumupType = (typeof SUMUP_TYPES)[number];

/** The zone of a user who has not set one. */
export const DEFAULT_TIMEZONE = 'UTC';

/** The first local day of each period an instant falls in. */
export type PeriodStarts = Record<SumupType, string>;

// One formatter per zone: building one costs far more than formatting with it.
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timezone: string): Intl.DateTimeFormat {
  let f = formatters.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      calendar: 'gregory',
      numberingSystem: 'latn',
    });
    formatters.set(timezone, f);
  }
  return f;
}

/** The calendar day `instant` falls on in `timezone` (an IANA name the platform knows). */
export function localDay(instant: Date, timezone: string): { year: number; month: number; day: number } {
  let year = 0;
  let month = 0;
  let day = 0;
  for (const part of formatterOf(timezone).formatToParts(instant)) {
    if (part.type === 'year') year = Number(part.value);
    else if (part.type === 'month') month = Number(part.value);
    else if (part.type === 'day') day = Number(part.value);
  }
  return { year, month, day };
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** `YYYY-MM-DD` of a calendar day. */
export function dayString(year: number, month: number, day: number): string {
  return `${pad(year, 4)}-${pad(month)}-${pad(day)}`;
}

/** The week, month and year `instant` falls in, in `timezone`, each by its first day. */
export function periodStarts(instant: Date, timezone: string): PeriodStarts {
  const { year, month, day } = localDay(instant, timezone);
  // Calendar arithmetic on the local day, in UTC where every day has 24 hours.
  const date = new Date(Date.UTC(year, month - 1, day));
  const sinceMonday = (date.getUTCDay() + 6) % 7;
  date.setUTCDate(date.getUTCDate() - sinceMonday);
  return {
    week: dayString(date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate()),
    month: dayString(year, month, 1),
    year: dayString(year, 1, 1),
  };
}

/** Whether `value` is a `YYYY-MM-DD` day that exists, from 1900 to 2099. */
export function isPeriodDay(value: string): boolean {
  if (!/^(19|20)\d{2}-\d{2}-\d{2}$/.test(value)) return false;
  const d = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(value);
}
