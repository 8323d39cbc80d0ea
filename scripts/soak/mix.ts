import { prng } from '../../bench/places-data.ts';
import { closedLoop } from '../../bench/stats.ts';
import { exportFlow } from './export-flow.ts';
import { json, send } from './http.ts';
import type { Phase, SoakWorld } from './phase.ts';
import { RouteStats } from './route-stats.ts';

/**
 * The realistic mix: what the apps of a sports platform ask, in these proportions (weights out of
 * 100, each a share of the requests the loops start):
 * - 36 places searches, the main screen of the apps: 14 an 8 × 8 km map box, 14 a 5 km radius,
 *   8 a 20 km radius with sport, tag, difficulty and distance filters;
 * - 10 sports catalogue name searches (three languages), 10 partners near a point;
 * - 14 activity lists and 6 reads of one activity with its streams (a user opening their history);
 * - 14 record lists (the records screen, read after each upload);
 * - 8 uploads of an activity with its streams (a watch syncing: SOAK_ACTIVITY_SECONDS at 1 Hz);
 * - 2 exports: POST, polled every 250 ms until done, downloaded, deleted (as a user downloading
 *   their data; the loop waits, as the user does).
 * Each kind's routes are the lines it adds to the report (method and route template).
 */
export const MIX = [
  { name: 'places-bbox', weight: 14, routes: ['GET /api/v1/places (bbox)'] },
  { name: 'places-radius', weight: 14, routes: ['GET /api/v1/places (radius)'] },
  { name: 'places-filtered', weight: 8, routes: ['GET /api/v1/places (filtered)'] },
  { name: 'catalogue-search', weight: 10, routes: ['GET /sports'] },
  { name: 'partners-search', weight: 10, routes: ['GET /api/v1/partners'] },
  { name: 'activity-list', weight: 14, routes: ['GET /v2/activities'] },
  { name: 'activity-read', weight: 6, routes: ['GET /v2/activities/{id}'] },
  { name: 'records', weight: 14, routes: ['GET /v2/user_records'] },
  { name: 'activity-post', weight: 8, routes: ['POST /v2/activities'] },
  {
    name: 'export',
    weight: 2,
    routes: ['POST /v2/exports', 'GET /v2/exports/{id}', 'GET /v2/exports/{id}/download', 'DELETE /v2/exports/{id}'],
  },
] as const;

type KindName = (typeof MIX)[number]['name'];

const CATALOGUE_SEARCHES: [string, string][] = [
  ['ski', 'en-US,en;q=0.9'],
  ['Run', 'en-US,en;q=0.9'],
  ['tennis', 'en-GB'],
  ['swim', 'en'],
  ['course', 'fr-CA,fr;q=0.9,en;q=0.5'],
  ['velo', 'fr-FR'],
  ['ESCALADE', 'fr'],
  ['randonnee', 'fr-FR,fr;q=0.9'],
  ['laufen', 'de, en;q=0.5'],
  ['schwimm', 'de-DE'],
];
const ACTIVITY_LISTS = ['', '?order[duration]=desc&limit=10', '?sport=121&limit=20', '?page=2&limit=5'];
const RECORD_LISTS = ['', '?type=distance.5000m', '?sport=121&order[value]=desc', '?datatype=5'];

export const mixPhase: Phase = {
  name: 'mix',
  describe: ({ settings }) =>
    `${settings.durationS} s, ${settings.concurrency} loops; weights: ${MIX.map((k) => `${k.name} ${k.weight}`).join(', ')}`,
  run: async (world) => {
    const stats = new RouteStats();
    const tasks = mixTasks(world, stats);
    const random = prng(2026);
    const total = MIX.reduce((n, k) => n + k.weight, 0);
    const pick = (): KindName => {
      let x = random() * total;
      for (const kind of MIX) {
        x -= kind.weight;
        if (x < 0) return kind.name;
      }
      return MIX[0].name;
    };
    await closedLoop(world.settings.concurrency, world.settings.durationS, async (n) => {
      // The first requests go through every kind once, so even a short run covers the whole mix.
      const kind = n < MIX.length ? (MIX[n] as (typeof MIX)[number]).name : pick();
      try {
        await tasks[kind]();
      } catch (error) {
        stats.record(`${kind} (soak client)`, 0, (error as Error).stack ?? String(error));
      }
    });
    stats.stop();
    return stats;
  },
};

/** The request (or requests) of each kind, as one task of a loop. */
function mixTasks(world: SoakWorld, stats: RouteStats): Record<KindName, () => Promise<void>> {
  const { apiUrl, settings } = world;
  const random = prng(99);
  const any = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const get = (route: string, path: string, headers: Record<string, string> = {}) =>
    send(stats, settings.requestTimeoutMs, { route, expect: 200, url: `${apiUrl}${path}`, init: { headers } });
  const freeExporters = [...world.exporters];

  return {
    'places-bbox': async () => {
      const [lng, lat] = any(world.centres);
      const dLng = 0.036 / Math.max(0.2, Math.cos((lat * Math.PI) / 180));
      const box = `sw=${(lng - dLng).toFixed(5)},${(lat - 0.036).toFixed(5)}&ne=${(lng + dLng).toFixed(5)},${(lat + 0.036).toFixed(5)}`;
      await get('GET /api/v1/places (bbox)', `/api/v1/places?${box}`);
    },
    'places-radius': async () => {
      const [lng, lat] = any(world.centres);
      await get('GET /api/v1/places (radius)', `/api/v1/places?origin=${lng.toFixed(5)},${lat.toFixed(5)}&radius=5`);
    },
    'places-filtered': async () => {
      const [lng, lat] = any(world.centres);
      const filters = 'sports=121&tags=outdoor&min_difficulty=1&max_distance=15000';
      await get(
        'GET /api/v1/places (filtered)',
        `/api/v1/places?origin=${lng.toFixed(5)},${lat.toFixed(5)}&radius=20&${filters}`,
      );
    },
    'catalogue-search': async () => {
      const [q, language] = any(CATALOGUE_SEARCHES);
      await get('GET /sports', `/sports?q=${encodeURIComponent(q)}`, { 'accept-language': language });
    },
    'partners-search': async () => {
      const [lng, lat] = any(world.centres);
      const extra = any(['', '', '&sport=121', '&page=2']);
      await get('GET /api/v1/partners', `/api/v1/partners?nearby[]=${lat.toFixed(5)},${lng.toFixed(5)}${extra}`);
    },
    'activity-list': async () => {
      await get('GET /v2/activities', `/v2/activities${any(ACTIVITY_LISTS)}`, any(world.users).headers);
    },
    'activity-read': async () => {
      const user = any(world.users);
      const id = any(world.activityIds.get(user.ldid) ?? []);
      await get('GET /v2/activities/{id}', `/v2/activities/${id}`, user.headers);
    },
    records: async () => {
      await get('GET /v2/user_records', `/v2/user_records${any(RECORD_LISTS)}`, any(world.users).headers);
    },
    'activity-post': async () => {
      const user = any(world.users);
      const created = await send(stats, settings.requestTimeoutMs, {
        route: 'POST /v2/activities',
        expect: 201,
        url: `${apiUrl}/v2/activities`,
        init: {
          method: 'POST',
          headers: { ...user.headers, 'content-type': 'application/ld+json' },
          body: world.activityBody(`/v2/users/${user.ldid}`),
        },
      });
      if (created) world.activityIds.get(user.ldid)?.push(json(created).id as string);
    },
    export: async () => {
      // As many exporting users as loops: one is always free.
      const user = freeExporters.pop();
      if (!user) throw new Error('no free exporting user');
      try {
        await exportFlow(stats, apiUrl, user, settings.requestTimeoutMs);
      } finally {
        freeExporters.push(user);
      }
    },
  };
}
