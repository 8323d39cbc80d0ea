// A typed client of the API over the generated `schema.ts` (generate.ts), with openapi-fetch.
// Two clients, each typed from one family of JSON media types, so every answer has one type:
// - `v2`, the tracking API, on `application/ld+json`: a list is a Hydra collection
//   (`hydra:member`, `hydra:totalItems`), its errors API Platform's;
// - `api`, the other services, on their JSON types (places and partners `application/json` with
//   `application/problem+json` errors, the catalogue `application/vnd.api+json`).
// A /v2 read also answers plain `application/json` (a bare array for a list): a client typed over
// both would see "collection | array" and need narrowing before reading `hydra:member`.
// Files come from the `.gpx` / `.tcx` paths.
// Run (Node 24): BASE_URL=... TOKEN=... KEY=... USER_IRI=/v2/users/... GPX_FILE=run.gpx node client.ts
import { readFileSync } from 'node:fs';
import createClient from 'openapi-fetch';
import type { paths } from './schema.ts';

type ServicesJson = 'application/json' | 'application/problem+json' | 'application/vnd.api+json';

const env = (name: string) => process.env[name] ?? '';
const api = createClient<paths, ServicesJson>({ baseUrl: env('BASE_URL') });
const v2 = createClient<paths, 'application/ld+json'>({ baseUrl: env('BASE_URL') });
const credentials = { authorization: `Bearer ${env('TOKEN')}`, 'x-api-key': env('KEY') };

// Places within 5 km of a point (longitude,latitude): numbers are numbers, as /openapi.json types them.
const places = await api.GET('/api/v1/places', { params: { query: { origin: '4.84,45.76', radius: 5, limit: 5 } } });

// Sport names in the language asked for.
const sports = await api.GET('/sports', { params: { query: { q: 'vélo' }, header: { 'accept-language': 'fr' } } });

// An activity in JSON, then read back with its streams.
const created = await v2.POST('/v2/activities', {
  headers: credentials,
  body: {
    user: env('USER_IRI'),
    sport: '/v2/sports/121',
    startdate: '2026-05-01T06:30:00+00:00',
    duration: 3,
    manual: true,
    name: 'Morning run',
    dataSummaries: { '5': 12 },
    datastream: { '0': { '5': 0 }, '3': { '5': 12 } },
  },
});
const activityId = created.data?.id ?? '';
const read = await v2.GET('/v2/activities/{id}', { headers: credentials, params: { path: { id: activityId } } });

// A GPX file, sent as its bytes with its media type.
const imported = await v2.POST('/v2/activities', {
  headers: { ...credentials, 'content-type': 'application/gpx+xml' },
  params: { query: { name: 'Imported run' } },
  body: new Blob([readFileSync(env('GPX_FILE'))]),
  bodySerializer: (file) => file,
});

// The same activity as a GPX download.
const gpx = await v2.GET('/v2/activities/{id}.gpx', {
  headers: credentials,
  params: { path: { id: activityId } },
  parseAs: 'text',
});

// POST /v2/activities answers 201 with the Activity, or 202 with a Job when a file is read on the
// workers (Prefer: respond-async, or a large file): the body's type is their union, narrowed here.
const activityOf = <T extends object>(data: T | undefined) => (data && 'name' in data ? data : undefined);
const createdActivity = activityOf(created.data);
const importedActivity = activityOf(imported.data);

// A list: a Hydra collection, read without narrowing.
const list = await v2.GET('/v2/activities', { headers: credentials, params: { query: { limit: 10 } } });
const total: number | undefined = list.data?.['hydra:totalItems'];
const names = list.data?.['hydra:member'].map((activity) => activity.name);

console.log(
  JSON.stringify({
    places: { status: places.response.status, count: places.data?.data.features.length },
    sports: { status: sports.response.status, first: sports.data?.data[0]?.attributes.name },
    created: { status: created.response.status, id: createdActivity?.id, name: createdActivity?.name },
    read: { status: read.response.status, name: read.data?.name, duration: read.data?.duration },
    imported: { status: imported.response.status, name: importedActivity?.name },
    gpx: { status: gpx.response.status, starts: gpx.data?.slice(0, 5) },
    list: { status: list.response.status, total, names },
  }),
);
