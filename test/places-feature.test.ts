import test from 'ava';
import { placeSchema, searchFeatureSchema } from '../shared/places/feature.ts';
import { startTestApi } from './helpers/app.ts';
import { call, createPlace } from './helpers/places.ts';

// Issue 37 §4: the place is defined once (shared/places/feature.ts). Its members and types bind
// the JS of the single-place answers and the SQL of the search's at compile time; the order the
// API writes them in is checked here, over HTTP, against the definition (and the documented
// schema of /openapi.json is the same zod object).

const api = await startTestApi(null);
const staff = await api.account(['staff']);
const created = await createPlace(api, staff.token, { name: 'Feature court' });
test.after.always(api.close);

const keysOf = (shape: object) => Object.keys(shape);

test('a place read, created or changed lists the members feature.ts defines, in its order', async (t) => {
  const expected = keysOf(placeSchema.shape.properties.shape);
  const read = await call(api, 'GET', `/places/${created.uuid}`);
  t.is(read.status, 200);
  t.deepEqual(keysOf(read.body.properties), expected);
  t.deepEqual(keysOf(created), expected);
  const changed = await call(api, 'PUT', `/places/${created.uuid}`, {
    token: staff.token,
    body: { name: 'Renamed court' },
  });
  t.is(changed.status, 200, JSON.stringify(changed.body));
  t.deepEqual(keysOf(changed.body.properties), expected);
  // PUT's answer lists the creator (the spec's update shape), as the definition documents.
  t.true(Array.isArray(changed.body.properties.user));
  t.true(placeSchema.shape.properties.shape.user.safeParse(changed.body.properties.user).success);
});

test("a search result lists the search's members feature.ts defines, in its order, and parses", async (t) => {
  const res = await call(api, 'GET', '/places?origin=3.0573,50.6292&radius=5');
  t.is(res.status, 200);
  const [feature] = res.body.data.features;
  t.deepEqual(keysOf(feature.properties), keysOf(searchFeatureSchema.shape.properties.shape));
  t.true(searchFeatureSchema.safeParse(feature).success, JSON.stringify(searchFeatureSchema.safeParse(feature).error));
});
