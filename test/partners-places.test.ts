import test from 'ava';
import { partnersService } from '../api/partners/index.ts';
import { placesService } from '../api/places/index.ts';
import { startTestApi } from './helpers/app.ts';
import { call, createPlace, paths } from './helpers/places.ts';

// Only the services these tests need (others may be mid-change in the tree).
const api = await startTestApi(null, { services: [placesService, partnersService] });
const staff = await api.account(['staff']);
const partnerAccount = await api.account(['partner']);
test.after.always(api.close);

const body = (overrides: Record<string, unknown> = {}) => ({
  partner: {
    user_id: Number(staff.number),
    title: 'Lille Running Club',
    source: 'website',
    link: 'https://example.org/lrc',
    lat: 50.6292,
    lng: 3.0573,
    country: 'FR',
    sports_attributes: [{ sport: 121 }],
    ...overrides,
  },
});
const post = (b: unknown, token: string | undefined = staff.token) =>
  call(api, 'POST', '/partners', { ...(token ? { token } : {}), body: b });

test('places: the partner field must name a partner of this service (422 body.partner otherwise)', async (t) => {
  await post(body({ slug: 'known-partner' }));
  const place = await createPlace(api, staff.token);
  const bad = await call(api, 'PUT', `/places/${place.uuid}`, {
    token: partnerAccount.token,
    body: { partner: 'nobody-here' },
  });
  t.is(bad.status, 422);
  t.deepEqual(paths(bad), ['body.partner']);
  const ok = await call(api, 'PUT', `/places/${place.uuid}`, {
    token: partnerAccount.token,
    body: { partner: 'known-partner' },
  });
  t.is(ok.body.properties.partner, 'known-partner');
  const cleared = await call(api, 'PUT', `/places/${place.uuid}`, {
    token: partnerAccount.token,
    body: { partner: null },
  });
  t.is(cleared.body.properties.partner, null);
});
