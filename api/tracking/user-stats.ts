import { z } from 'zod';
import { iri } from '../../shared/tracking/iri.ts';
import { type UserTotals, userTotals } from '../../shared/tracking/sumups/read.ts';
import { userVisibleTo } from '../../shared/tracking/users/store.ts';
import type { AppContext } from '../context.ts';
import type { HydraView } from '../http/formats/format.ts';
import { contextIri, hydraSerializer } from '../http/formats/hydra.ts';
import type { ApiRouter } from '../http/route.ts';
import { trackingResource } from './tracking-resource.ts';

/** Datatype id → total, the shape of an activity's `dataSummaries`. */
const totals = z.record(z.string(), z.number()).meta({
  description: "datatype id → the total in the datatype's unit; 98 (Activity number): the count",
  example: { '5': 42195.5, '24': 15300, '98': 4 },
});

/** UserStats (docs/tracking-statistics.md): a user's totals over all time, for every sport and per sport. */
const statsSchema = z
  .object({
    user: z.string().meta({ format: 'iri-reference', example: '/v2/users/a1b2c3' }),
    dataSummaries: totals.meta({ description: "every sport's activities together" }),
    sports: z
      .array(
        z.object({
          sport: z.string().meta({ format: 'iri-reference', example: '/v2/sports/121' }),
          dataSummaries: totals,
        }),
      )
      .meta({ description: 'one entry per sport the user has activities of, by sport id' }),
  })
  .meta({ id: 'UserStats' });

interface Stats {
  userId: string;
  totals: UserTotals[];
}

const summaries = (rows: UserTotals[]) => Object.fromEntries(rows.map((t) => [String(t.datatypeId), Number(t.value)]));

function statsFields(s: Stats): z.input<typeof statsSchema> {
  const bySport = new Map<number, UserTotals[]>();
  for (const t of s.totals) if (t.sportId !== null) bySport.set(t.sportId, [...(bySport.get(t.sportId) ?? []), t]);
  return {
    user: iri('users', s.userId),
    dataSummaries: summaries(s.totals.filter((t) => t.sportId === null)),
    sports: [...bySport].map(([sport, rows]) => ({ sport: iri('sports', sport), dataSummaries: summaries(rows) })),
  };
}

const statsView: HydraView<Stats, typeof statsSchema> = {
  type: 'UserStats',
  path: '/v2/users',
  id: (s) => `${s.userId}/stats`,
  fields: statsFields,
};

const userParams = z.object({ id: z.string().min(1).max(128) });

/** /v2/users/{id}/stats: the caller's totals over all time (another id: 404). */
export function userStatsResource(router: ApiRouter, app: AppContext): void {
  const serializer = hydraSerializer(statsView);
  trackingResource(router, app, {
    path: '/users',
    itemParams: userParams,
    item: statsSchema,
    hydra: statsView,
    notFound: 'No such user (a caller sees only their own)',
    tag: 'tracking users',
  }).action({
    method: 'get',
    path: '/stats',
    summary: "The caller's totals over all time",
    description:
      "For `{id}` the caller's own user id (another id: 404). `dataSummaries`: datatype id → the total over every activity (the cumulable datatypes, and 98, Activity number, the count); `sports`: the same per sport. Summed from the yearly statistics of /v2/user_sumups in one indexed read; they follow each activity change a moment after it (docs/tracking-statistics.md).",
    response: serializer.itemSchema(statsSchema),
    handler: async ({ params, caller }) => {
      const user = userVisibleTo(caller, params.id);
      const stats: Stats = { userId: user.id, totals: await userTotals(app.db, user.id) };
      // Its own IRI, not the view's (which would name the user).
      const id = `${iri('users', user.id)}/stats`;
      return { '@context': contextIri(statsView), '@id': id, '@type': statsView.type, ...statsFields(stats) };
    },
  });
}
