import type { TrackingTestApi, TrackingTestUser } from './tracking.ts';

export const MEDIA = {
  gpx: 'application/gpx+xml',
  tcx: 'application/tcx+xml',
  fit: 'application/vnd.ant.fit',
} as const;

export type Body = Record<string, unknown>;

/** The two ways to send an activity file to POST /v2/activities of `api`. */
export function activityFileUploads(api: TrackingTestApi) {
  /** POST of a file as the raw body, with its media type (or `type`) and query fields. */
  const postRaw = (u: TrackingTestUser | null, bytes: Uint8Array, type: string, query = '') =>
    api.call('POST', `/activities${query}`, u, { raw: bytes, headers: { 'content-type': type } });

  /** POST of a file as multipart/form-data, field `file`, with form fields (and a query string). */
  function postForm(
    u: TrackingTestUser | null,
    bytes: Uint8Array,
    name: string,
    fields: Record<string, string> = {},
    query = '',
  ) {
    const form = new FormData();
    form.append('file', new Blob([bytes], { type: 'application/octet-stream' }), name);
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    return api.call('POST', `/activities${query}`, u, { raw: form });
  }

  return { postRaw, postForm };
}
