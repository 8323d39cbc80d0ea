import { randomUUID } from 'node:crypto';
import test from 'ava';
import { startTestApi, type TestApi } from './helpers/app.ts';
import {
  anonymousExpectation,
  fillPath,
  type MatrixCase,
  type MatrixOperation,
  matrixOperations,
  namingProblems,
  runCases,
} from './helpers/ownership-matrix.ts';
import { call } from './helpers/places.ts';

// The ownership matrices of the partners service and of the sports catalogue, generated from
// /openapi.json (helpers/ownership-matrix.ts). Partners are public records the operator's staff
// keep (docs/partners.md): anyone reads them; every write answers another account 403, the
// partner's own account included, before the partner is looked up (an unknown id gets the same
// 403, so nothing is disclosed), and a caller without a token 401. The catalogue is the public,
// read-only sports referential (docs/catalogue.md, docs/recommendations.md): everyone reads it.

let api: TestApi;
let partners: MatrixOperation[];
let catalogue: MatrixOperation[];
test.before(async () => {
  api = await startTestApi(null);
  partners = await matrixOperations(api, 'partners');
  catalogue = await matrixOperations(api, 'catalogue');
});
test.after.always(() => api?.close());

interface Row {
  /** What the operation acts on. */
  object: 'partner' | 'sport' | 'group' | 'recommendations';
  /** What another account gets (the same for the partner's own account). */
  other: number;
  /** A valid write (an invalid one is a 422 whoever asks, which tells nothing). */
  body?: unknown;
}

/** Staff only, checked before the partner is looked up. */
const STAFF = 403;
const WRITE = { partner: { title: 'Taken over' } };

const PARTNERS: Record<string, Row> = {
  'GET /api/v1/partners/{partner_id}': { object: 'partner', other: 200 },
  'PUT /api/v1/partners/{partner_id}': { object: 'partner', other: STAFF, body: WRITE },
  'POST /api/v1/partners/{partner_id}': { object: 'partner', other: STAFF, body: WRITE },
  'DELETE /api/v1/partners/{partner_id}': { object: 'partner', other: STAFF },
};

const CATALOGUE: Record<string, Row> = {
  'GET /sports/{id_or_slug}': { object: 'sport', other: 200 },
  'GET /groups/{slug_or_id}': { object: 'group', other: 200 },
  'GET /sports/{id}/recommendations': { object: 'recommendations', other: 200 },
  'GET /sports/{id}/recommendations/{location}': { object: 'recommendations', other: 200 },
};

/** The cases of a matrix: each row as every caller, without a token, and (403 rows) on an unknown id. */
function casesOf(
  operations: readonly MatrixOperation[],
  matrix: Record<string, Row>,
  values: Record<string, string>,
  callers: Record<string, string>,
  unknown: Record<string, string>,
): MatrixCase[] {
  return operations.flatMap((op) => {
    const row = matrix[op.name];
    if (!row) return [];
    const base = { op, path: fillPath(op.path, values), body: row.body, expected: row.other };
    const cases: MatrixCase[] = Object.entries(callers).map(([who, token]) => ({
      ...base,
      who: `as ${who}`,
      authorization: `Bearer ${token}`,
    }));
    cases.push({ ...base, who: 'without a token', expected: anonymousExpectation(op, row.other) });
    if (row.other === 403) {
      const path = fillPath(op.path, { ...values, ...unknown });
      cases.push(...cases.filter((c) => c.authorization).map((c) => ({ ...c, path, who: `${c.who}, unknown id` })));
    }
    return cases;
  });
}

test('every partners and catalogue operation with an id is in the matrix', (t) => {
  t.deepEqual(namingProblems(partners, Object.keys(PARTNERS)), []);
  t.deepEqual(namingProblems(catalogue, Object.keys(CATALOGUE)), []);
});

test("a partner: public reads, another account's writes 403 (the partner's own too), without a token 401, and it does not change", async (t) => {
  const staff = await api.account(['staff']);
  const other = await api.account();
  const own = await api.account(['partner']);
  const created = await call(api, 'POST', '/partners', {
    token: staff.token,
    body: {
      partner: {
        user_id: own.number,
        title: `Matrix Club ${randomUUID().slice(0, 8)}`,
        source: 'website',
        link: 'https://example.org/club',
        lat: 50.6292,
        lng: 3.0573,
        sports_attributes: [{ sport: 121 }],
      },
    },
  });
  t.is(created.status, 201, JSON.stringify(created.body));
  const uuid: string = created.body.uuid;
  const cases = casesOf(
    partners,
    PARTNERS,
    { partner_id: uuid },
    { 'another user': other.token, "the partner's own account": own.token },
    { partner_id: randomUUID() },
  );
  t.true(cases.length >= 16, String(cases.length));
  t.deepEqual(await runCases(api, cases), []);
  t.deepEqual((await call(api, 'GET', `/partners/${uuid}`)).body, created.body, 'the partner is as it was');
});

test('the catalogue: every reader, with a token or without, gets the public referential', async (t) => {
  const other = await api.account();
  const cases = casesOf(
    catalogue,
    CATALOGUE,
    { id_or_slug: 'running', slug_or_id: 'athletics', id: '121', location: 'FR' },
    { 'another user': other.token },
    {},
  );
  t.true(cases.length >= 8, String(cases.length));
  t.deepEqual(await runCases(api, cases), []);
});
