import sports from '../../referentials/sports.json' with { type: 'json' };
import { DEFAULT_IMPORT_SPORT_ID } from '../formats/file-sports.ts';
import { movingRuleOf } from './moving-time.ts';

/**
 * Sport families for the duplicate rule (duplicates.ts): two devices recording one session may
 * name its sport differently (a FIT's `rowing`, a TCX's `Other`), so the near rule compares
 * families, not ids. A sport's family is its moving-time family (running, cycling, paddling...:
 * moving-time.ts), else its root in the referential. The catch-all a file that names no sport
 * gets (DEFAULT_IMPORT_SPORT_ID) says nothing, so it is in every family.
 */

const byId = new Map(sports.map((s) => [s.id, s]));

function ancestry(id: number): number[] {
  const chain: number[] = [];
  // A depth limit, so a cycle in the referential cannot loop.
  for (let s = byId.get(id); s && chain.length < 16; s = s.parentId === null ? undefined : byId.get(s.parentId))
    chain.push(s.id);
  return chain.length ? chain : [id];
}

const familyOf = (id: number): string => {
  const chain = ancestry(id);
  return movingRuleOf(chain)?.family ?? `sport-${chain.at(-1)}`;
};

const families = new Map<string, number[]>();
for (const s of sports) families.set(familyOf(s.id), [...(families.get(familyOf(s.id)) ?? []), s.id]);

/** The sports an activity of `sportId` may duplicate under the near rule; null: any sport. */
export function sameFamilySports(sportId: number): number[] | null {
  if (sportId === DEFAULT_IMPORT_SPORT_ID) return null;
  const family = families.get(familyOf(sportId)) ?? [sportId];
  return [...new Set([...family, sportId, DEFAULT_IMPORT_SPORT_ID])];
}
