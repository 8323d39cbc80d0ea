import test from 'ava';
import sharp from 'sharp';
import { MEDIA } from './helpers/activity-file-uploads.ts';
import { fixture } from './helpers/activity-files.ts';
import { placeBody } from './helpers/places.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity, HIKING, RUNNING } from './helpers/tracking-activities.ts';

// Every POST that creates takes an Idempotency-Key (docs/idempotency.md): one table of them, each
// sent twice with a key (one object, the same answer replayed), and the OpenAPI entries that
// document the header, the replay mark and the 400/409/422.

const gpx = await fixture('devices/gpx/korita-zbevnica.gpx');
const api = await startTrackingApi();
test.after.always(() => api.close());
const { db } = api.database;
const png = () =>
  sharp({ create: { width: 8, height: 8, channels: 3, background: '#c03' } })
    .png()
    .toBuffer();

type Body = { json: unknown } | { raw: () => RequestInit['body']; type?: string };
interface Route {
  name: string;
  /** The whole path; `u` is the caller the route is tried with. */
  path: (u: TrackingTestUser) => string;
  body: (u: TrackingTestUser) => Promise<Body> | Body;
  /** Objects the route created for `u` (one after a request and its retry). */
  count: (u: TrackingTestUser) => Promise<number>;
  staff?: boolean;
}

const rows = async (
  table:
    | 'activities'
    | 'user_measures'
    | 'user_devices'
    | 'share_activities'
    | 'share_users'
    | 'tracking_exports'
    | 'tracking_uploads'
    | 'user_web_hooks'
    | 'user_equipments'
    | 'user_measure_goals'
    | 'user_challenges',
  u: TrackingTestUser,
) =>
  Number(
    (
      await db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .where('user_id', '=', u.ldid)
        .executeTakeFirstOrThrow()
    ).n,
  );
const form = (fields: Record<string, string | Blob>) => () => {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields))
    typeof value === 'string' ? data.append(name, value) : data.append(name, value, 'upload.bin');
  return data;
};
const send = (u: TrackingTestUser, path: string, body: Body, key: string) => {
  const headers: Record<string, string> = { authorization: `Bearer ${u.token}`, 'idempotency-key': key };
  if (path.startsWith('/v2/')) headers['x-api-key'] = api.apiKey;
  if ('json' in body) headers['content-type'] = path.startsWith('/v2/') ? 'application/ld+json' : 'application/json';
  else if (body.type) headers['content-type'] = body.type;
  return api.fetch(path, {
    method: 'POST',
    headers,
    body: 'json' in body ? JSON.stringify(body.json) : body.raw(),
  });
};
/** A place of `u`'s own (no key), for the routes below a place. */
const placeOf = async (u: TrackingTestUser) => {
  const res = await send(u, '/api/v1/places', { json: placeBody() }, `setup-${Math.random()}`);
  return ((await res.json()) as { properties: { uuid: string } }).properties.uuid;
};
const places = new Map<string, string>();
const activityIds = new Map<string, string>();

const ROUTES: Route[] = [
  {
    name: 'POST /v2/activities (JSON)',
    path: () => '/v2/activities',
    body: (u) => ({ json: activity(u) }),
    count: (u) => rows('activities', u),
  },
  {
    name: 'POST /v2/activities (GPX file)',
    path: () => `/v2/activities?sport=${HIKING}`,
    body: () => ({ raw: () => gpx, type: MEDIA.gpx }),
    count: (u) => rows('activities', u),
  },
  {
    name: 'POST /v2/activities (multipart)',
    path: () => '/v2/activities',
    body: () => ({ raw: form({ file: new Blob([gpx]), sport: String(HIKING) }) }),
    count: (u) => rows('activities', u),
  },
  {
    name: 'POST /v2/file_import/activities',
    path: () => `/v2/file_import/activities?sport=${HIKING}`,
    body: () => ({ raw: () => gpx, type: MEDIA.gpx }),
    count: (u) => rows('activities', u),
  },
  {
    name: 'POST /v2/user_measures',
    path: () => '/v2/user_measures',
    body: (u) => ({
      json: { user: `/v2/users/${u.ldid}`, datatype: '/v2/datatypes/181', value: 72500, date: '2024-05-01T08:30:00Z' },
    }),
    count: (u) => rows('user_measures', u),
  },
  {
    name: 'POST /v2/user_devices',
    path: () => '/v2/user_devices',
    body: () => ({ json: { serial: 'SN-IDEMPOTENT', model: '/v2/device_models/1', firmware: '/v2/firmwares/2' } }),
    count: (u) => rows('user_devices', u),
  },
  {
    name: 'POST /v2/share_activities',
    path: () => '/v2/share_activities',
    body: async (u) => {
      const created = await send(u, '/v2/activities', { json: activity(u) }, `setup-${u.ldid}`);
      const { id } = (await created.json()) as { id: string };
      activityIds.set(u.ldid, id);
      return { json: { user: `/v2/users/${u.ldid}`, activity: `/v2/activities/${id}` } };
    },
    count: (u) => rows('share_activities', u),
  },
  {
    name: 'POST /v2/share_users',
    path: () => '/v2/share_users',
    body: async () => {
      const friend = await api.user();
      await api.call('GET', '/me', friend);
      return { json: { user: `/v2/users/${friend.ldid}` } };
    },
    count: (u) => rows('share_users', u),
  },
  {
    name: 'POST /v2/user_web_hooks',
    path: () => '/v2/user_web_hooks',
    body: (u) => ({ json: { user: `/v2/users/${u.ldid}`, url: 'https://hooks.example.com/idempotent' } }),
    count: (u) => rows('user_web_hooks', u),
  },
  {
    name: 'POST /v2/user_equipments',
    path: () => '/v2/user_equipments',
    body: () => ({ json: { category: 'shoes', brand: 'Kalenji', name: 'Kiprun KS900' } }),
    count: (u) => rows('user_equipments', u),
  },
  {
    name: 'POST /v2/user_measure_goals',
    path: () => '/v2/user_measure_goals',
    body: (u) => ({
      json: {
        user: `/v2/users/${u.ldid}`,
        datatype: '/v2/datatypes/181',
        goal: 70000,
        startdate: '2024-05-01T08:30:00Z',
      },
    }),
    count: (u) => rows('user_measure_goals', u),
  },
  {
    name: 'POST /v2/user_challenges',
    path: () => '/v2/user_challenges',
    body: () => ({
      json: {
        name: 'May',
        targetDatatype: '/v2/datatypes/5',
        target: 100000,
        startedAt: '2024-05-01T00:00:00Z',
        endedAt: '2024-06-01T00:00:00Z',
      },
    }),
    count: (u) => rows('user_challenges', u),
  },
  {
    name: 'POST /v2/exports',
    path: () => '/v2/exports',
    body: () => ({ json: { format: 'gpx' } }),
    count: (u) => rows('tracking_exports', u),
  },
  {
    name: 'POST /v2/users/{id}/export_personal_data',
    path: (u) => `/v2/users/${u.ldid}/export_personal_data`,
    body: () => ({ json: {} }),
    count: (u) => rows('tracking_exports', u),
  },
  {
    name: 'POST /v2/upload',
    path: () => '/v2/upload',
    body: async () => ({ raw: form({ file: new Blob([await png()], { type: 'image/png' }) }) }),
    count: (u) => rows('tracking_uploads', u),
  },
  {
    name: 'POST /api/v1/places',
    path: () => '/api/v1/places',
    body: () => ({ json: placeBody({ name: 'Idempotent court' }) }),
    count: async (u) =>
      Number(
        (
          await db
            .selectFrom('places')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('name', '=', 'Idempotent court')
            .where('created_by', '=', u.id)
            .executeTakeFirstOrThrow()
        ).n,
      ),
    staff: true,
  },
  {
    name: 'POST /api/v1/places/{place_id}/activities',
    path: (u) => `/api/v1/places/${places.get(u.ldid)}/activities`,
    body: async (u) => {
      places.set(u.ldid, await placeOf(u));
      return { json: { sport_id: RUNNING, tags: [] } };
    },
    count: async (u) => {
      const place = await db
        .selectFrom('places')
        .select('id')
        .where('uuid', '=', places.get(u.ldid) ?? '')
        .executeTakeFirst();
      return (
        (
          await db
            .selectFrom('place_activities')
            .select('sport_id')
            .where('place_id', '=', place?.id ?? 0)
            .execute()
        ).length - 1
      );
    },
  },
  {
    name: 'POST /api/v1/partners',
    path: () => '/api/v1/partners',
    body: (u) => ({
      json: {
        partner: {
          user_id: Number(u.number),
          title: 'Idempotent Club',
          source: 'website',
          link: 'https://example.org/idempotent',
          lat: 50.6292,
          lng: 3.0573,
          sports_attributes: [{ sport: RUNNING }],
        },
      },
    }),
    count: async () =>
      (await db.selectFrom('partners').select('id').where('title', '=', 'Idempotent Club').execute()).length,
    staff: true,
  },
];

for (const route of ROUTES)
  test(`${route.name}: a retry with the same key creates nothing more and replays the answer`, async (t) => {
    const u = await api.user(route.staff ? ['staff'] : ['user']);
    const body = await route.body(u);
    const first = await send(u, route.path(u), body, 'route-key');
    const firstBody = await first.text();
    t.true(first.status === 200 || first.status === 201, `${first.status} ${firstBody}`);
    t.is(first.headers.get('idempotent-replayed'), null);
    const again = await send(u, route.path(u), body, 'route-key');
    t.is(again.status, first.status);
    t.is(again.headers.get('idempotent-replayed'), 'true');
    t.is(await again.text(), firstBody);
    t.is(again.headers.get('location'), first.headers.get('location'));
    t.is(await route.count(u), 1);
  });

test('the OpenAPI document declares the header, the replay mark and the 400/409/422 on exactly those operations', async (t) => {
  type Operation = {
    parameters?: { in: string; name: string; required?: boolean }[];
    responses: Record<string, { description: string; headers?: Record<string, unknown> }>;
  };
  const doc = (await (await api.fetch('/openapi.json')).json()) as { paths: Record<string, Record<string, Operation>> };
  const taking: string[] = [];
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item)) {
      const header = op.parameters?.find((p) => p.in === 'header' && p.name === 'idempotency-key');
      if (!header) continue;
      taking.push(`${method} ${path}`);
      t.not(header.required, true, path);
      for (const status of ['400', '409', '422']) t.truthy(op.responses[status], `${path} ${status}`);
      t.regex(op.responses['409']?.description ?? '', /Idempotency-Key is still in progress/, path);
      const success = Object.entries(op.responses).filter(([status]) => status.startsWith('2'));
      for (const [status, response] of success)
        t.truthy(response.headers?.['Idempotent-Replayed'], `${path} ${status}`);
    }
  t.deepEqual(taking.sort(), [
    'post /api/v1/partners',
    'post /api/v1/places',
    'post /api/v1/places/{place_id}/activities',
    'post /v2/activities',
    'post /v2/exports',
    'post /v2/file_import/activities',
    'post /v2/jobs',
    'post /v2/share_activities',
    'post /v2/share_users',
    'post /v2/upload',
    'post /v2/user_challenges',
    'post /v2/user_devices',
    'post /v2/user_equipments',
    'post /v2/user_measure_goals',
    'post /v2/user_measures',
    'post /v2/user_web_hooks',
    'post /v2/users/{id}/export_personal_data',
  ]);
  // A 409 the operation had already keeps its own reason beside the key's.
  t.regex(
    doc.paths['/v2/exports']?.post?.responses['409']?.description ?? '',
    /^An export is in progress.*; or a request/,
  );
  // The place create keeps its Accept-Language beside the key.
  const names = (doc.paths['/api/v1/places']?.post?.parameters ?? [])
    .filter((p) => p.in === 'header')
    .map((p) => p.name);
  t.deepEqual(names.sort(), ['accept-language', 'idempotency-key']);
});

test('the headers an operation declares are part of the request: another Accept-Language is another request', async (t) => {
  const staff = await api.user(['staff']);
  const body = { json: placeBody({ notes: 'Éclairé le soir' }) };
  const post = (language: string) =>
    api.fetch('/api/v1/places', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${staff.token}`,
        'content-type': 'application/json',
        'accept-language': language,
        'idempotency-key': 'place-language',
      },
      body: JSON.stringify(body.json),
    });
  const french = await post('fr-FR');
  t.is(french.status, 201, await french.text());
  const english = await post('en');
  t.is(english.status, 422);
  t.regex(
    ((await english.json()) as { errors: { message: string }[] }).errors[0]?.message ?? '',
    /accept-language \(fr-FR\)/,
  );
});
