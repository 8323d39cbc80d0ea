import { randomUUID } from 'node:crypto';
import test from 'ava';
import { ADMIN_SCOPE, API_SCOPES } from '../shared/auth/scopes.ts';
import { startTestApi, type TestApi } from './helpers/app.ts';
import { createClient } from './helpers/oauth-clients.ts';
import {
  anonymousExpectation,
  fillPath,
  type MatrixCase,
  type MatrixOperation,
  matrixOperations,
  namingProblems,
  runCases,
} from './helpers/ownership-matrix.ts';
import { mintToken } from './helpers/tokens.ts';

// The ownership matrix of the accounts routes with an id, generated from /openapi.json
// (helpers/ownership-matrix.ts; docs/accounts.md, "Which calls need what"). A client's API keys
// belong to that client: another client's credentials get 404 (its keys do not exist for them),
// none 401. The staff routes on an account answer an ordinary user, and a staff account whose
// token lacks the `admin` scope, 403 before the account is looked up (an unknown id gets the same
// 403), and a caller without a token 401. Nothing of the owner's changes.

let api: TestApi;
let operations: MatrixOperation[];
test.before(async () => {
  api = await startTestApi(null);
  operations = await matrixOperations(api, 'accounts');
});
test.after.always(() => api?.close());

interface Row {
  /** What the operation acts on: a client (its credentials are the caller's), one of its API keys, an account. */
  object: 'client' | 'api key' | 'account';
  /** What another client (client and key rows) or a caller without staff powers (account rows) gets. */
  other: number;
  /** A valid write (an invalid one is a 422 whoever asks, which tells nothing). */
  body?: unknown;
}

/** Staff only, checked before the account is looked up. */
const STAFF = 403;

const MATRIX: Record<string, Row> = {
  'POST /api/v1/clients/{client_id}/api-keys': { object: 'client', other: 404, body: { label: 'taken over' } },
  'GET /api/v1/clients/{client_id}/api-keys': { object: 'client', other: 404 },
  'DELETE /api/v1/clients/{client_id}/api-keys/{key_id}': { object: 'api key', other: 404 },
  'POST /api/v1/accounts/{id}/disable': { object: 'account', other: STAFF },
  'POST /api/v1/accounts/{id}/enable': { object: 'account', other: STAFF },
  'DELETE /api/v1/accounts/{id}/sessions': { object: 'account', other: STAFF },
  'PUT /api/v1/accounts/{id}/roles': { object: 'account', other: STAFF, body: { roles: ['staff'] } },
};

test('every accounts operation with an id is in the matrix', (t) => {
  t.deepEqual(namingProblems(operations, Object.keys(MATRIX)), []);
});

test("another client gets 404 on a client's API keys, a caller without staff powers 403 on an account, without credentials 401, and nothing changes", async (t) => {
  const { db } = api.database;
  const owner = await createClient(api);
  const stranger = await createClient(api);
  const issued = await api.fetch(`/api/v1/clients/${owner.client_id}/api-keys`, {
    method: 'POST',
    headers: { authorization: owner.basic, 'content-type': 'application/json' },
    body: JSON.stringify({ label: 'mine' }),
  });
  t.is(issued.status, 201);
  const key = (await issued.json()) as { id: string };
  const keysOf = async (client: typeof owner) =>
    (
      await api.fetch(`/api/v1/clients/${client.client_id}/api-keys`, { headers: { authorization: client.basic } })
    ).text();
  const keysBefore = await keysOf(owner);

  const user = await api.account();
  const ordinary = await api.account();
  const staffAccount = await api.account(['staff']);
  const staffWithoutAdmin = await mintToken(db, api.config, staffAccount, {
    scopes: API_SCOPES.filter((s) => s !== ADMIN_SCOPE),
  });
  const accountState = () =>
    db.selectFrom('accounts').select(['disabled_at', 'token_version']).where('id', '=', user.id).executeTakeFirst();
  const stateBefore = await accountState();

  const values = { client_id: owner.client_id, key_id: key.id, id: user.id };
  const callers: Record<Row['object'], Record<string, string>> = {
    client: { 'another client': stranger.basic },
    'api key': { 'another client': stranger.basic },
    account: { 'an ordinary user': `Bearer ${ordinary.token}`, 'staff without admin': `Bearer ${staffWithoutAdmin}` },
  };
  const cases = operations.flatMap((op) => {
    const row = MATRIX[op.name];
    if (!row) return [];
    const base = { op, path: fillPath(op.path, values), body: row.body, expected: row.other };
    const asOthers: MatrixCase[] = Object.entries(callers[row.object]).map(([who, authorization]) => ({
      ...base,
      who: `as ${who}`,
      authorization,
    }));
    const unknown = fillPath(op.path, { ...values, id: randomUUID() });
    return [
      ...asOthers,
      ...(row.other === 403 ? asOthers.map((c) => ({ ...c, path: unknown, who: `${c.who}, unknown id` })) : []),
      { ...base, who: 'without credentials', expected: anonymousExpectation(op, row.other) },
    ];
  });
  // The owner's key through the other client's own path: still not theirs.
  const [revoke] = operations.filter((op) => op.name === 'DELETE /api/v1/clients/{client_id}/api-keys/{key_id}');
  if (revoke) {
    const path = fillPath(revoke.path, { ...values, client_id: stranger.client_id });
    cases.push({
      op: revoke,
      path,
      who: 'as another client, on its own path',
      authorization: stranger.basic,
      expected: 404,
    });
  }
  t.true(cases.length >= 20, String(cases.length));
  t.deepEqual(await runCases(api, cases), []);

  t.is(await keysOf(owner), keysBefore, "the owner's keys are as they were (none revoked, none added)");
  t.deepEqual(await accountState(), stateBefore, 'the account is neither disabled nor signed out');
  const stillValid = await api.fetch('/api/v1/places/pending', { headers: { authorization: `Bearer ${user.token}` } });
  t.is(stillValid.status, 200, "the account's token still works");
});
