/**
 * Sports done on foot, whose people read their speed as a pace (minutes per km): running, the
 * treadmill, walking, Nordic walking, hiking, mountaineering and snow-shoeing, with every child
 * sport of theirs (trail, marathon...). Ids of the seeded sports referential.
 */
export const FOOT_SPORTS: ReadonlySet<number> = new Set([121, 395, 113, 114, 168, 153, 173]);

/** Whether a sport is done on foot, from its ancestry (the sport, then its parent, and so on). */
export function isFootSport(ancestry: readonly number[]): boolean {
  return ancestry.some((id) => FOOT_SPORTS.has(id));
}
