import { backdrop, PALETTE, svgNumber } from './track-svg.ts';

/**
 * The thumbnail of an activity without a GPS track: one pictogram per sport family (the sports
 * referential's universes), drawn from shapes only. No text: the result would depend on the
 * fonts installed on each worker, and thumbnails must come out byte for byte the same anywhere.
 */
export type SportFamily =
  | 'air'
  | 'team'
  | 'combat'
  | 'fitness'
  | 'motor'
  | 'mountain'
  | 'equestrian'
  | 'water'
  | 'other'
  | 'racket'
  | 'wheel';

/** Universe id (the seeded referential) to its family; an unknown or missing universe is `other`. */
const FAMILY_OF_UNIVERSE: Record<number, SportFamily> = {
  1: 'air',
  2: 'team',
  3: 'combat',
  4: 'fitness',
  5: 'motor',
  6: 'mountain',
  7: 'equestrian',
  8: 'water',
  9: 'other',
  10: 'racket',
  11: 'wheel',
};

export function sportFamily(universeId: number | null | undefined): SportFamily {
  return (universeId !== null && universeId !== undefined && FAMILY_OF_UNIVERSE[universeId]) || 'other';
}

const line = 'fill="none" stroke-width="6" stroke-linecap="round" stroke-linejoin="round"';

/** Each pictogram in a 100 × 100 box, stroked or filled with `currentColor`. */
const PICTOGRAMS: Record<SportFamily, string> = {
  // A paraglider: canopy, lines, pilot.
  air: `<path d="M12 40Q50 0 88 40" ${line}/><path d="M18 40L50 76M82 40L50 76M50 24L50 76" fill="none" stroke-width="2.5"/><circle cx="50" cy="81" r="7"/>`,
  // A ball with its seams.
  team: `<circle cx="50" cy="50" r="36" ${line}/><path d="M14 50H86M50 14V86M24 24Q44 50 24 76M76 24Q56 50 76 76" fill="none" stroke-width="4"/>`,
  // A boxing glove.
  combat: `<path d="M30 58V38Q30 18 52 18Q74 18 74 40V58Q74 66 66 66H38Q30 66 30 58Z"/><path d="M30 44Q18 44 20 56Q22 64 32 62" ${line}/><rect x="36" y="70" width="34" height="14" rx="3"/>`,
  // A heartbeat.
  fitness: `<path d="M8 54H32L40 32L52 76L60 44L66 54H92" ${line}/>`,
  // A steering wheel.
  motor: `<circle cx="50" cy="50" r="34" ${line}/><circle cx="50" cy="50" r="8"/><path d="M16 50H42M58 50H84M50 58V84" fill="none" stroke-width="6"/>`,
  // Two peaks.
  mountain: `<path d="M8 82L38 30L52 52L64 38L92 82Z"/><path d="M31 42L38 30L45 42L38 38Z" fill="${PALETTE.background}"/>`,
  // A horseshoe.
  equestrian: `<path d="M30 84V46A20 20 0 0 1 70 46V84" fill="none" stroke-width="12" stroke-linecap="round"/>`,
  // Waves.
  water: `<path d="M10 36Q20 26 30 36T50 36T70 36T90 36M10 56Q20 46 30 56T50 56T70 56T90 56M10 76Q20 66 30 76T50 76T70 76T90 76" ${line}/>`,
  // A stopwatch.
  other: `<circle cx="50" cy="56" r="32" ${line}/><rect x="42" y="10" width="16" height="9" rx="2"/><path d="M50 56L50 36M50 19V24" ${line}/>`,
  // A racket and its ball.
  racket: `<ellipse cx="44" cy="38" rx="22" ry="28" transform="rotate(-35 44 38)" ${line}/><path d="M59 61L82 88" fill="none" stroke-width="9" stroke-linecap="round"/><circle cx="80" cy="24" r="7"/>`,
  // A bicycle.
  wheel: `<circle cx="26" cy="64" r="17" ${line}/><circle cx="74" cy="64" r="17" ${line}/><path d="M26 64L42 38H64L74 64M42 38L50 64H26M50 64L64 38M38 30H48M64 38L60 28H68" ${line}/>`,
};

/** The placeholder of a sport family as a standalone SVG document. */
export function placeholderSvg(family: SportFamily, width: number, height: number): string {
  const size = Math.min(width, height) * 0.5;
  const scale = size / 100;
  const x = (width - size) / 2;
  const y = (height - size) / 2;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="No GPS track">`,
    backdrop(width, height),
    `<g transform="translate(${svgNumber(x)} ${svgNumber(y)}) scale(${Math.round(scale * 1000) / 1000})" fill="${PALETTE.pictogram}" stroke="${PALETTE.pictogram}">`,
    PICTOGRAMS[family],
    '</g></svg>',
  ].join('');
}

export const SPORT_FAMILIES = Object.keys(PICTOGRAMS) as SportFamily[];
