import { randomBytes } from 'node:crypto';
import yauzl from 'yauzl';
import type { ExportRow } from '../../shared/tracking/exports/export-state.ts';
import { ensureTrackingUser } from '../../shared/tracking/users/store.ts';
import type { TrackingTestApi, TrackingTestUser } from './tracking.ts';

/** Shared by the test/tracking-exports-*.test.ts files (not a test file itself). */

export type Body = Record<string, unknown>;
export const me = (u: TrackingTestUser) => `/v2/users/${u.ldid}`;

export const waitFor = async <T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 120_000): Promise<T> => {
  const end = Date.now() + ms;
  let value = await read();
  while (!done(value) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 50));
    value = await read();
  }
  return value;
};

/** The activities and exports these tests make, through `api` or in its database. */
export function exportCalls(api: TrackingTestApi) {
  const { db } = api.database;

  /** An activity of `u` through the API: `n` seconds at 1 Hz, with a GPS track and heart rate when `track`. */
  async function activityOf(u: TrackingTestUser, startdate: string, options: { track?: boolean; name?: string } = {}) {
    const datastream: Body = {};
    const locations: Body = {};
    if (options.track)
      for (let s = 0; s < 5; s++) {
        datastream[String(s)] = { '1': 120 + s, '5': s * 3.5 };
        locations[String(s)] = { latitude: 50.6292 + s * 1e-5, longitude: 3.0573 + s * 1e-5, elevation: 21 + s };
      }
    const res = await api.call('POST', '/activities', u, {
      body: {
        name: options.name ?? 'Run',
        user: me(u),
        sport: '/v2/sports/121',
        startdate,
        duration: 4,
        dataSummaries: { '5': 14, '24': 4 },
        ...(options.track ? { datastream, locations } : {}),
      },
    });
    if (res.status !== 201) throw new Error(`POST /activities answered ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body as Body & { id: string };
  }

  /**
   * A pending export of `u` written without its outbox job, so these tests run the job themselves
   * (with the job, the worker of the test file would take it at once).
   */
  async function exportWithoutJob(u: TrackingTestUser): Promise<ExportRow> {
    await ensureTrackingUser(db, { accountId: u.id, ldid: u.ldid, claims: {} });
    return db
      .insertInto('tracking_exports')
      .values({
        id: randomBytes(16).toString('hex'),
        user_id: u.ldid,
        download_token: randomBytes(32).toString('base64url'),
        activity_count: null,
        file_path: null,
        error: null,
        started_at: null,
        finished_at: null,
        expires_at: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** Requests an export of `u` and waits until the worker finished it. */
  async function exportDone(u: TrackingTestUser) {
    const res = await api.call('POST', '/exports', u);
    if (res.status !== 201) throw new Error(`POST /exports answered ${res.status}: ${JSON.stringify(res.body)}`);
    return waitFor(
      async () => (await api.call('GET', `/exports/${res.body.id}`, u)).body as Body,
      (e) => e.status === 'done' || e.status === 'failed',
    );
  }

  return { activityOf, exportWithoutJob, exportDone };
}

/** Every entry of a zip, in order, read with yauzl (another implementation than the writer's). */
export function unzip(data: Buffer): Promise<Map<string, Buffer>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(data, { lazyEntries: true, strictFileNames: true, validateEntrySizes: true }, (err, zip) => {
      if (err || !zip) return reject(err);
      const entries = new Map<string, Buffer>();
      zip.on('error', reject);
      zip.on('end', () => resolve(entries));
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (e, stream) => {
          if (e || !stream) return reject(e);
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => {
            entries.set(entry.fileName, Buffer.concat(chunks));
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}
