// A typed client of the API over the generated `schema.ts` (generate.ts), with openapi-fetch.
// Answers are typed from their JSON media types (`application/json`, `application/ld+json`,
// `application/geo+json`, `application/vnd.api+json`): files come from the `.gpx` / `.tcx` paths.
// Run: BASE_URL=... TOKEN=... KEY=... USER_IRI=/v2/users/... GPX_FILE=run.gpx node client.ts
import { readFileSync } from 'node:fs';
import createClient from 'openapi-fetch';
import type { paths } from './schema.ts';

const env = (name: string) => process.env[name] ?? '';
const api = createClient<paths, `application/${string}json`>({ baseUrl: env('BASE_URL') });
const credentials = { authorization: `Bearer ${env('TOKEN')}`, 'x-api-key': env('KEY') };

// Places within 5 km of a point (longitude,latitude): numbers are numbers, as /openapi.json types them.
const places = await api.GET('/api/v1/places', { params: { query: { origin: '4.84,45.76', radius: 5, limit: 5 } } });

// Sport names in the language asked for.
const sports = await api.GET('/sports', { params: { query: { q: 'vélo' }, header: { 'accept-language': 'fr' } } });

// An activity in JSON, then read back with its streams.
const created = await api.POST('/v2/activities', {
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
const read = await api.GET('/v2/activities/{id}', { headers: credentials, params: { path: { id: activityId } } });

// A GPX file, sent as its bytes with its media type.
const imported = await api.POST('/v2/activities', {
  headers: { ...credentials, 'content-type': 'application/gpx+xml' },
  params: { query: { name: 'Imported run' } },
  body: new Blob([readFileSync(env('GPX_FILE'))]),
  bodySerializer: (file) => file,
});

// The same activity as a GPX download.
const gpx = await api.GET('/v2/activities/{id}.gpx', {
  headers: credentials,
  params: { path: { id: activityId } },
  parseAs: 'text',
});

console.log(
  JSON.stringify({
    places: { status: places.response.status, count: places.data?.data.features.length },
    sports: { status: sports.response.status, first: sports.data?.data[0]?.attributes.name },
    created: { status: created.response.status, id: created.data?.id, name: created.data?.name },
    read: { status: read.response.status, name: read.data?.name, duration: read.data?.duration },
    imported: { status: imported.response.status, name: imported.data?.name },
    gpx: { status: gpx.response.status, starts: gpx.data?.slice(0, 5) },
  }),
);
