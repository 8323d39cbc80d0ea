/**
 * Languages of the catalogue: the names and descriptions of the referential are keyed by these
 * codes. English is the fallback: every sport and group has an English name.
 */
export const CATALOGUE_LANGUAGES = ['en', 'fr', 'de', 'es', 'hu', 'it', 'nl', 'pl', 'pt', 'ru', 'zh'] as const;
export type CatalogueLanguage = (typeof CATALOGUE_LANGUAGES)[number];
export const FALLBACK_LANGUAGE: CatalogueLanguage = 'en';

const KNOWN = new Set<string>(CATALOGUE_LANGUAGES);

/**
 * The languages a client accepts, most wanted first, reduced to the catalogue's (`fr-CA` is
 * served as `fr`), always ending with the fallback. Ranges with q=0 are refused; `*` and
 * unknown or malformed ranges add nothing. At most 10 ranges are read (hostile headers).
 */
export function preferredLanguages(acceptLanguage: string | undefined): CatalogueLanguage[] {
  const ranges: { lang: string; q: number; at: number }[] = [];
  for (const [at, part] of (acceptLanguage ?? '').split(',').slice(0, 10).entries()) {
    const [tag = '', ...params] = part.trim().split(';');
    const m = /^([a-zA-Z]{1,8})(?:-[a-zA-Z0-9]{1,8})*$/.exec(tag.trim());
    if (!m?.[1]) continue;
    let q = 1;
    for (const p of params) {
      const qm = /^\s*q\s*=\s*([01](?:\.\d{0,3})?)\s*$/.exec(p);
      if (qm?.[1]) q = Math.min(1, Number(qm[1]));
    }
    if (q > 0) ranges.push({ lang: m[1].toLowerCase(), q, at });
  }
  ranges.sort((a, b) => b.q - a.q || a.at - b.at);
  const out: CatalogueLanguage[] = [];
  for (const { lang } of ranges)
    if (KNOWN.has(lang) && !out.includes(lang as CatalogueLanguage)) out.push(lang as CatalogueLanguage);
  if (!out.includes(FALLBACK_LANGUAGE)) out.push(FALLBACK_LANGUAGE);
  return out;
}
