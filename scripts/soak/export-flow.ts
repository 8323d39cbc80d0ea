import type { SoakUser } from './credentials.ts';
import { json, send } from './http.ts';
import type { RouteStats } from './route-stats.ts';

const POLL_MS = 250;
/** The report's line for the whole flow (from the POST to the zip downloaded). */
export const EXPORT_FLOW = 'export requested → downloaded';

/**
 * A user's export as an app runs it: POST /v2/exports, GET it until it is done (an export that
 * fails, or is not done within `timeoutMs`, is an error), download the zip, then delete it (a
 * user holds at most 5 exports).
 */
export async function exportFlow(stats: RouteStats, apiUrl: string, user: SoakUser, timeoutMs: number): Promise<void> {
  const started = performance.now();
  const request = (route: string, expect: number, url: string, method = 'GET', headers = user.headers) =>
    send(stats, timeoutMs, { route, expect, url, init: { method, headers } });
  const created = await request('POST /v2/exports', 201, `${apiUrl}/v2/exports`, 'POST');
  if (!created) return;
  const id = json(created).id as string;
  const flowError = (message: string) => stats.flow(EXPORT_FLOW, performance.now() - started, message);
  try {
    let download: string | undefined;
    while (download === undefined) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      const polled = await request('GET /v2/exports/{id}', 200, `${apiUrl}/v2/exports/${id}`);
      if (!polled) return;
      const { status, url, error } = json(polled);
      if (status === 'done') download = url as string;
      else if (status !== 'pending' && status !== 'running')
        return flowError(`export ${id} is ${status}${error ? `: ${error}` : ''}`);
      else if (performance.now() - started > timeoutMs)
        return flowError(`export ${id} still ${status} after ${timeoutMs / 1000} s`);
    }
    // The link carries its own secret: sent without credentials, as a browser opens it.
    const zip = await request('GET /v2/exports/{id}/download', 200, download, 'GET', {});
    if (!zip) return;
    if (zip.subarray(0, 4).toString('binary') !== 'PK\x03\x04')
      return flowError(`export ${id}: the download is not a zip`);
    stats.flow(EXPORT_FLOW, performance.now() - started);
  } finally {
    await request('DELETE /v2/exports/{id}', 204, `${apiUrl}/v2/exports/${id}`, 'DELETE');
  }
}
