import { loadCities, loadPlaces, populationSampler, prng } from '../../bench/places-data.ts';
import { bytes } from '../../bench/stats.ts';
import { RUNNING } from '../../bench/tracking-records-data.ts';
import { activityBodies } from './activity-body.ts';
import { type SoakUser, soakUsers } from './credentials.ts';
import { json, send } from './http.ts';
import type { SoakWorld } from './phase.ts';
import { RouteStats } from './route-stats.ts';
import type { SoakSettings } from './settings.ts';
import type { SoakSystem } from './system.ts';

const CENTRES = 200;
/** Activities each user holds before the mix starts, so the first reads find some. */
const ACTIVITIES_BEFORE = 2;
const SETUP_CONCURRENCY = 4;

/**
 * The data of the run: users with credentials, places (COPY, as the places benchmark loads them),
 * partners and a few activities per user (through the API, as clients make them).
 */
export async function buildWorld(
  system: SoakSystem,
  settings: SoakSettings,
  log: (s: string) => void,
): Promise<SoakWorld> {
  const started = Date.now();
  const ttl = Math.ceil(settings.durationS) + 3_600;
  const groups = await soakUsers(
    system.db,
    system.api.url,
    {
      user: { count: settings.users, roles: ['user'] },
      exporter: { count: settings.concurrency, roles: ['user'] },
      staff: { count: 1, roles: ['staff'] },
    },
    ttl,
  );
  const places = await loadPlaces(system.pool, settings.places, () => {});
  const pick = populationSampler(loadCities(), prng(42));
  const cities = Array.from({ length: Math.max(CENTRES, settings.partners) }, pick);
  const world: SoakWorld = {
    apiUrl: system.api.url,
    settings,
    users: groups.user ?? [],
    exporters: groups.exporter ?? [],
    staff: (groups.staff ?? [])[0] as SoakUser,
    centres: cities.slice(0, CENTRES).map((c) => [c.lng, c.lat]),
    activityIds: new Map(),
    activityBody: activityBodies(settings.activitySeconds),
  };

  const stats = new RouteStats();
  const post = (path: string, headers: Record<string, string>, body: string) =>
    send(stats, settings.requestTimeoutMs, {
      route: `POST ${path}`,
      expect: 201,
      url: `${world.apiUrl}${path}`,
      init: { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body },
    });
  const random = prng(7);
  const sports = [
    RUNNING,
    ...(await system.db.selectFrom('sports').select('id').orderBy('id').limit(50).execute()).map((s) => s.id),
  ];
  await inParallel(settings.partners, async (i) => {
    const city = cities[i] as (typeof cities)[number];
    const partner = {
      title: `Soak partner ${i}`,
      source: 'soak',
      link: `https://example.org/soak/${i}`,
      city: city.name,
      country: city.country,
      lat: Math.max(-90, Math.min(90, city.lat + (random() - 0.5) * 0.1)),
      lng: Math.max(-180, Math.min(180, city.lng + (random() - 0.5) * 0.1)),
      user_id: world.staff.number,
      sports_attributes: [{ sport: sports[Math.floor(random() * sports.length)] }],
    };
    await post('/api/v1/partners', world.staff.headers, JSON.stringify({ partner }));
  });
  const owners = [...world.users, ...world.exporters].flatMap((u) => Array<SoakUser>(ACTIVITIES_BEFORE).fill(u));
  await inParallel(owners.length, async (i) => {
    const user = owners[i] as SoakUser;
    const created = await post('/v2/activities', user.headers, world.activityBody(`/v2/users/${user.ldid}`));
    if (created)
      world.activityIds.set(user.ldid, [...(world.activityIds.get(user.ldid) ?? []), json(created).id as string]);
  });
  stats.stop();
  if (stats.errors > 0) throw new Error(`the data could not be made:\n${stats.report().join('\n')}`);
  log(
    `data: ${world.users.length} users, ${world.exporters.length} exporting users, 1 staff account; ` +
      `${places.places} places (${places.activities} place activities), ${settings.partners} partners, ` +
      `${owners.length} activities of ${settings.activitySeconds} s at 1 Hz (${bytes(Buffer.byteLength(world.activityBody('/v2/users/x')))} of JSON each); made in ${((Date.now() - started) / 1000).toFixed(0)} s`,
  );
  return world;
}

/** Runs task(0..count-1), a few at a time. */
async function inParallel(count: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const loop = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: SETUP_CONCURRENCY }, loop));
}
