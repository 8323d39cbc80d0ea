import { issueApiKey } from '../../shared/accounts/api-keys.ts';
import { registerClient } from '../../shared/accounts/clients.ts';
import { recordConsent } from '../../shared/accounts/consents.ts';
import { mintToken } from './tokens.ts';
import type { TrackingTestApi, TrackingTestUser } from './tracking.ts';

export const TRACKING_SCOPES = ['tracking:read', 'tracking:write'];

/** A third-party application the user allowed `scopes`: its client, and tracking calls with its key and a token of it. */
export async function allowedApp(api: TrackingTestApi, u: TrackingTestUser, name: string, scopes = TRACKING_SCOPES) {
  const { db } = api.database;
  const client = await registerClient(db, { client_name: name, redirect_uris: ['https://app.example.com/cb'] });
  const { api_key: key } = await issueApiKey(db, client.client_id, name);
  await recordConsent(db, u.id, client.client_id, ['openid', ...scopes]);
  const token = await mintToken(db, api.config, u, { clientId: client.client_id, scopes });
  const as = { ...u, token };
  return {
    clientId: client.client_id,
    call: (method: string, path: string, body?: unknown) =>
      api.call(method, path, as, { headers: { 'x-api-key': key }, ...(body !== undefined ? { body } : {}) }),
  };
}
