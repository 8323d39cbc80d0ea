import test from 'ava';
import fc from 'fast-check';
import { parseGeometry, parseLngLat, positionError } from '../shared/places/geojson.ts';
import { readLocale, writeLocale } from '../shared/places/locale.ts';

const lng = fc.double({ min: -180, max: 180, noNaN: true });
const lat = fc.double({ min: -90, max: 90, noNaN: true });
const position = fc.tuple(lng, lat);

test('property: every in-range Point, LineString and closed Polygon is accepted', (t) => {
  fc.assert(
    fc.property(
      position,
      fc.array(position, { minLength: 2, maxLength: 20 }),
      fc.array(position, { minLength: 3, maxLength: 20 }),
      (p, line, ring) => {
        const closed = [...ring, ring[0]];
        return (
          parseGeometry({ type: 'Point', coordinates: p }, 'g').errors.length === 0 &&
          parseGeometry({ type: 'LineString', coordinates: line }, 'g').errors.length === 0 &&
          parseGeometry({ type: 'Polygon', coordinates: [closed] }, 'g').errors.length === 0
        );
      },
    ),
  );
  t.pass();
});

test('property: an open ring is rejected with its path', (t) => {
  fc.assert(
    fc.property(fc.array(position, { minLength: 4, maxLength: 20 }), (ring) => {
      fc.pre(ring[0]?.[0] !== ring.at(-1)?.[0] || ring[0]?.[1] !== ring.at(-1)?.[1]);
      const { errors } = parseGeometry({ type: 'Polygon', coordinates: [ring] }, 'g');
      return errors.length === 1 && errors[0]?.path === 'g.coordinates[0]' && /closed/.test(errors[0].message);
    }),
  );
  t.pass();
});

test('property: a [lat, lng] pair that is only valid swapped is reported as swapped', (t) => {
  fc.assert(
    fc.property(
      fc.double({ min: -90, max: 90, noNaN: true }),
      fc.double({ min: 90.0001, max: 180, noNaN: true }),
      fc.boolean(),
      (a, b, neg) => {
        const bigLat = neg ? -b : b;
        const e = positionError([a, bigLat], 'p');
        return e !== undefined && /valid swapped/.test(e.message);
      },
    ),
  );
  t.pass();
});

test('property: out of range both ways is rejected without the swap hint', (t) => {
  fc.assert(
    fc.property(fc.double({ min: 180.0001, max: 1e6, noNaN: true }), lat, (a, b) => {
      const e = positionError([a, b + 1e6], 'p');
      return e !== undefined && !/swapped/.test(e.message);
    }),
  );
  t.pass();
});

test('positions: 2 or 3 finite numbers', (t) => {
  t.truthy(positionError([1], 'p'));
  t.truthy(positionError([1, 2, 3, 4], 'p'));
  t.truthy(positionError([1, Number.NaN], 'p'));
  t.is(positionError([1, 2, 300], 'p'), undefined);
  t.truthy(parseLngLat('1', 'origin').error);
  t.truthy(parseLngLat('1,2,3', 'origin').error);
  t.deepEqual(parseLngLat('3.06,50.63', 'origin').point, [3.06, 50.63]);
  t.regex(parseLngLat('50.63,120', 'origin').error?.message ?? '', /send 120,50.63/);
});

test('locales: negotiation for reads, exact match for writes', (t) => {
  t.is(readLocale(undefined), 'en');
  t.is(readLocale('fr-CA'), 'fr-CA');
  t.is(readLocale('PT-br'), 'pt-BR');
  t.is(readLocale('es-AR, es;q=0.8'), 'es-ES');
  t.is(readLocale('en-US'), 'en');
  t.is(readLocale('zh-CN'), 'cn');
  t.is(readLocale('xx, *'), 'en');
  t.is(readLocale('de;q=0.1, it;q=0.9'), 'it');
  t.is(writeLocale(undefined), 'en');
  t.is(writeLocale('ja'), 'ja');
  t.is(writeLocale('en-gb'), 'en-GB');
  t.is(writeLocale('fr-BE'), undefined);
  t.is(writeLocale('ru, en;q=0.5'), undefined);
});
