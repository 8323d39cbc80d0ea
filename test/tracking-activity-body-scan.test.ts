import { isDeepStrictEqual } from 'node:util';
import test from 'ava';
import fc from 'fast-check';
import { BodySyntaxError, DomainError } from '../shared/errors.ts';
import { ACTIVITY_LIMITS, datastreamFromJson, trackFromJson } from '../shared/tracking/activities/content.ts';
import { parseActivityBody } from '../shared/tracking/body/parse.ts';
import { scanActivityBody } from '../shared/tracking/body/scan.ts';

// No database: the fast path of an activity body against the generic one (JSON.parse, then
// shared/tracking/activities/content.ts), which is the reference it must agree with or leave the body to.

const encode = (text: string) => Buffer.from(text, 'utf8');
const decode = (bytes: Uint8Array) => new TextDecoder('utf-8', { fatal: false, ignoreBOM: false }).decode(bytes);
const scan = (text: string) => scanActivityBody(encode(text), decode);

/** The generic path's answer, or the error it throws. */
function generic(text: string) {
  try {
    const parsed = JSON.parse(decode(encode(text)));
    const { datastream, locations, ...body } = parsed;
    return { body, datastream: datastreamFromJson(datastream), track: trackFromJson(locations) };
  } catch (error) {
    return { error };
  }
}

const sampleBody = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    name: 'Morning run',
    user: '/v2/users/abc',
    datastream: { '0': { '1': 90, '5': 0 }, '1': {}, '3': { '1': 95.5, '5': 3.25, '178': -1.5e-7 } },
    locations: { '0': { latitude: 45.1, longitude: 6.2, elevation: 210.5 }, '2': { latitude: -45, longitude: 180 } },
    tags: ['a', { nested: [1, 'x,}]"'] }],
    ...extra,
  });

test('a well-formed body is read from its bytes, exactly as the generic path reads it', (t) => {
  const text = sampleBody();
  const fast = scan(text);
  t.truthy(fast);
  t.true(isDeepStrictEqual(fast, generic(text)));
  t.deepEqual([...(fast?.datastream.channels.keys() ?? [])], [1, 5, 178]);
  t.is(fast?.datastream.channels.get(178)?.[2], -1.5e-7);
  t.true(Number.isNaN(fast?.datastream.channels.get(1)?.[1]));
  t.true(Number.isNaN(fast?.track.elevation[1]));
  // parseActivityBody takes this path and gives the same.
  t.true(isDeepStrictEqual(parseActivityBody(encode(text)), fast));
});

test('numbers: every form JSON allows gives the double JSON.parse gives', (t) => {
  const texts = ['0', '-0', '1', '-1', '0.1', '0.30000000000000004', '1e2', '1E-2', '-2.5e+3', '123456789012345678'];
  texts.push('9007199254740993', '1.7976931348623157e308', '5e-324', '0.000001', '999999999999999.9', '12.50');
  for (const n of texts) {
    const fast = scan(`{"datastream":{"0":{"1":${n}}}}`);
    t.true(Object.is(fast?.datastream.channels.get(1)?.[0], JSON.parse(n)), n);
  }
  fc.assert(
    fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (v) => {
      const text = JSON.stringify(v); // -0 is written 0
      const fast = scan(`{"datastream":{"7":{"3":${text}}}}`);
      return Object.is(fast?.datastream.channels.get(3)?.[0], JSON.parse(text));
    }),
    { numRuns: 2000 },
  );
});

test('what the fast path leaves to the generic path, which then decides', (t) => {
  const leftAlone = {
    'seconds out of order': '{"datastream":{"2":{"1":1},"1":{"1":2}}}',
    'a repeated second': '{"datastream":{"1":{"1":1},"1":{"1":2}}}',
    'datatypes out of order': '{"datastream":{"0":{"5":1,"1":2}}}',
    'a datatype 0': '{"datastream":{"0":{"0":1}}}',
    'an elapsed key with a leading zero': '{"datastream":{"01":{"1":1}}}',
    'an elapsed second past the limit': `{"datastream":{"${ACTIVITY_LIMITS.maxSeconds + 1}":{}}}`,
    'a string value': '{"datastream":{"0":{"1":"90"}}}',
    'null for a value': '{"datastream":{"0":{"1":null}}}',
    'an infinite number': '{"datastream":{"0":{"1":1e309}}}',
    'a leading zero': '{"datastream":{"0":{"1":01}}}',
    'a null datastream': '{"datastream":null}',
    'an array datastream': '{"datastream":[1]}',
    'two datastreams': '{"datastream":{},"datastream":{"0":{}}}',
    'an escaped member name': '{"data\\u0073tream":{"0":{"1":1}}}',
    'a latitude out of range': '{"locations":{"0":{"latitude":91,"longitude":0}}}',
    'a missing longitude': '{"locations":{"0":{"latitude":1}}}',
    'an unknown location member': '{"locations":{"0":{"latitude":1,"longitude":2,"speed":3}}}',
    'a repeated latitude': '{"locations":{"0":{"latitude":1,"latitude":2,"longitude":2}}}',
    'a __proto__ member': '{"datastream":{},"__proto__":{"x":1}}',
    'a syntax error in the rest': '{"datastream":{},"name":}',
    'a trailing comma': '{"datastream":{},}',
    'bytes after the object': '{"datastream":{}} x',
    'a byte order mark': '\uFEFF{"datastream":{}}',
    'no stream at all': '{"name":"x"}',
    'an array body': '[{"datastream":{}}]',
  };
  for (const [why, text] of Object.entries(leftAlone)) t.is(scan(text), undefined, why);
  // Through parseActivityBody, the generic path's answers and errors, as before.
  t.true(
    t.throws(() => parseActivityBody(encode(leftAlone['a __proto__ member'])), { instanceOf: BodySyntaxError })
      ?.prototypeMember as boolean,
  );
  t.deepEqual(
    t.throws(() => parseActivityBody(encode(leftAlone['a string value'])), { instanceOf: DomainError })?.errors,
    [{ path: 'body.datastream.0.1', message: 'must be a number' }],
  );
  const twice = parseActivityBody(encode(leftAlone['two datastreams']));
  t.deepEqual([...twice.datastream.elapsed], [0]);
});

test('columns longer than the first allocation: a datatype that stops early still has one value per sample', (t) => {
  // 10,000 samples: past the columns' initial room, so they grow; datatype 7 is only in the first one.
  const datastream = Object.fromEntries(
    Array.from({ length: 10_000 }, (_, s) => [s, s === 0 ? { '1': s, '7': 3 } : { '1': s }]),
  );
  const locations = Object.fromEntries(
    Array.from({ length: 9_000 }, (_, s) => [s * 2, { latitude: s / 1e4, longitude: 1 }]),
  );
  const text = JSON.stringify({ datastream, locations });
  const fast = scan(text);
  t.is(fast?.datastream.channels.get(7)?.length, 10_000);
  t.is(fast?.track.elevation.length, 9_000);
  t.true(isDeepStrictEqual(fast, generic(text)));
});

test('the cells limit: past it, the generic path names the error', (t) => {
  const n = 1000;
  const datatypes = Math.floor(ACTIVITY_LIMITS.maxDatastreamCells / n) + 1;
  const sample = Object.fromEntries(Array.from({ length: datatypes }, (_, i) => [String(i + 1), 1]));
  const text = JSON.stringify({ datastream: Object.fromEntries(Array.from({ length: n }, (_, s) => [s, sample])) });
  t.is(scan(text), undefined);
  t.throws(() => parseActivityBody(encode(text)), { instanceOf: DomainError, message: /invalid/i });
});

/** Bodies as clients write them: streams with gaps, datatypes that come and go, other members. */
const activityText = fc
  .record({
    samples: fc.array(
      fc.tuple(
        fc.integer({ min: 0, max: 60 }),
        fc.dictionary(
          fc.constantFrom('1', '5', '6', '10', '14', '23', '100', '178', '999999999'),
          fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer({ min: -1e6, max: 1e6 })),
        ),
      ),
      { maxLength: 40 },
    ),
    points: fc.array(
      fc.tuple(
        fc.integer({ min: 0, max: 60 }),
        fc.double({ min: -90, max: 90, noNaN: true }),
        fc.double({ min: -180, max: 180, noNaN: true }),
        fc.option(fc.double({ noNaN: true, noDefaultInfinity: true }), { nil: null }),
        fc.boolean(),
      ),
      { maxLength: 40 },
    ),
    rest: fc.dictionary(
      // Member names JSON.stringify writes without escapes (an escaped name is left to the generic path).
      fc.string({ maxLength: 8 }).filter((k) => k !== '__proto__' && JSON.stringify(k) === `"${k}"`),
      fc.jsonValue({ maxDepth: 2 }),
      { maxKeys: 4 },
    ),
    streamsFirst: fc.boolean(),
    space: fc.constantFrom('', ' ', '\n  ', '\t'),
  })
  .map(({ samples, points, rest, streamsFirst, space }) => {
    let t = 0;
    const datastream: Record<string, unknown> = {};
    for (const [gap, values] of samples) {
      t += gap;
      datastream[t] = values;
    }
    t = 0;
    const locations: Record<string, unknown> = {};
    for (const [gap, latitude, longitude, elevation, withElevation] of points) {
      t += gap;
      locations[t] = withElevation ? { latitude, longitude, elevation } : { latitude, longitude };
    }
    const streams = { datastream, locations };
    const body = streamsFirst ? { ...streams, ...rest } : { ...rest, ...streams };
    return JSON.stringify(body, null, space);
  })
  // A `__proto__` member anywhere is refused (400) by both paths: not a valid body.
  .filter((text) => !text.includes('"__proto__"'));

test('property: on any valid body the fast path answers, with what the generic path gives', (t) => {
  fc.assert(
    fc.property(activityText, (text) => {
      const fast = scan(text);
      return fast !== undefined && isDeepStrictEqual(fast, generic(text));
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('property: on a damaged body, the fast path gives up or agrees with the generic path', (t) => {
  const damage = fc.tuple(
    fc.nat(),
    fc.constantFrom('delete', 'insert', 'replace'),
    fc.constantFrom(...'{}[]:,"\\0123456789-+.eE nul\u00e9x'),
  );
  let answered = 0;
  fc.assert(
    fc.property(activityText, fc.array(damage, { minLength: 1, maxLength: 3 }), (text, damages) => {
      let broken = text;
      for (const [at, how, char] of damages) {
        const i = at % (broken.length + 1);
        broken =
          how === 'delete'
            ? broken.slice(0, i) + broken.slice(i + 1)
            : broken.slice(0, i) + char + broken.slice(how === 'insert' ? i : i + 1);
      }
      const fast = scan(broken);
      if (fast === undefined) return true;
      answered++;
      const reference = generic(broken);
      return !('error' in reference) && isDeepStrictEqual(fast, reference);
    }),
    { numRuns: 3000 },
  );
  // Most damage lands in the streams and is refused; some leaves a valid body, which is answered.
  t.true(answered > 0);
});
