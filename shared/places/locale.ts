import { invalid } from '../errors.ts';

/** Locales whose `notes` a place keeps (the places spec's Localization section; docs/places.md). */
export const LOCALES = [
  'en',
  'en-GB',
  'fr-FR',
  'fr-CA',
  'pt-PT',
  'pt-BR',
  'es-ES',
  'es-MX',
  'it',
  'de',
  'ja',
  'cn',
  'pl',
] as const;
export type Locale = (typeof LOCALES)[number];
export const DEFAULT_LOCALE: Locale = 'en';

const byLower = new Map(LOCALES.map((l) => [l.toLowerCase(), l]));

export const isLocale = (value: string): value is Locale => (LOCALES as readonly string[]).includes(value);

/** Accept-Language entries by preference (q-values, then order); `*` and q=0 dropped. */
function ranges(header: string): string[] {
  return header
    .split(',')
    .map((part, i) => {
      const [tag = '', ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find(Boolean);
      return { tag: tag.trim(), q: q === undefined ? 1 : Number(q), i };
    })
    .filter((r) => r.tag && r.tag !== '*' && r.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i)
    .map((r) => r.tag);
}

/**
 * Locale for reading: the first Accept-Language entry we support exactly (case-insensitive),
 * else the first whose language matches one of ours (fr-BE → fr-FR, en-US → en, zh → cn),
 * else `en`. An absent header means `en`.
 */
export function readLocale(header: string | undefined): Locale {
  if (!header) return DEFAULT_LOCALE;
  const tags = ranges(header);
  for (const t of tags) {
    const exact = byLower.get(t.toLowerCase());
    if (exact) return exact;
  }
  for (const t of tags) {
    const lang = (t.split('-')[0] ?? '').toLowerCase();
    const match = LOCALES.find((l) => l.toLowerCase().split('-')[0] === (lang === 'zh' ? 'cn' : lang));
    if (match) return match;
  }
  return DEFAULT_LOCALE;
}

/**
 * Locale for writing notes: the preferred Accept-Language entry must be one of the 13 locales
 * (case-insensitive), so text is never stored under a locale the client did not name.
 * Absent header: `en`. Returns undefined when unsupported (the caller answers 422).
 */
export function writeLocale(header: string | undefined): Locale | undefined {
  if (!header) return DEFAULT_LOCALE;
  const first = ranges(header)[0];
  if (!first) return DEFAULT_LOCALE;
  return byLower.get(first.toLowerCase());
}

/** The locale notes are written in; an unsupported Accept-Language is an error naming the header. */
export function notesLocale(header: string | undefined): Locale {
  const locale = writeLocale(header);
  if (locale) return locale;
  throw invalid([
    {
      path: 'headers.accept-language',
      message: `unsupported locale "${header}" for writing notes; use one of ${LOCALES.join(', ')}`,
    },
  ]);
}
