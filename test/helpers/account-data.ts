import { existsSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import sharp from 'sharp';
import { issueApiKey } from '../../shared/accounts/api-keys.ts';
import { registerClient } from '../../shared/accounts/clients.ts';
import { recordConsent } from '../../shared/accounts/consents.ts';
import type { TrackingTestApi, TrackingTestUser } from './tracking.ts';
import { type Body, me, waitFor } from './tracking-exports.ts';

/**
 * Everything a user can have, made through the API where it has a route (activities, photo,
 * measure, device, gear, goal, challenge, share, export, an idempotency key) and in the database otherwise (places,
 * partner, clients). Shared by test/accounts-deletion.test.ts and
 * test/tracking-export-personal-data.test.ts; the workers of the records, thumbnails and exports
 * queues must run.
 */
export interface UserData {
  activityIds: string[];
  /** Storage path of the uploaded photo. */
  uploadPath: string;
  uploadUrl: string;
  measureId: string;
  deviceId: string;
  equipmentId: string;
  goalId: number;
  challengeId: string;
  shareToken: string;
  exportId: string;
  exportUrl: string;
  pendingPlaceUuid: string;
  approvedPlaceId: number;
  partnerId: number;
  thirdPartyClient: string;
  thirdPartyKey: string;
  firstPartyClient: string;
}

/** A small PNG of one color. */
export const png = () =>
  sharp({ create: { width: 32, height: 24, channels: 3, background: { r: 20, g: 140, b: 60 } } })
    .png()
    .toBuffer();

/** The files of a storage folder (none when it does not exist). */
export const filesIn = async (storageDir: string, folder: string) =>
  readdir(path.join(storageDir, folder)).catch(() => [] as string[]);

export const storedFileExists = (storageDir: string, relative: string) => existsSync(path.join(storageDir, relative));

/** Gives `u` one of everything (see UserData). */
export async function populateUser(api: TrackingTestApi, u: TrackingTestUser): Promise<UserData> {
  const { db } = api.database;
  const storageDir = api.config.STORAGE_DIR;
  const ok = (what: string, res: { status: number; body: unknown }, status = 201) => {
    if (res.status !== status) throw new Error(`${what} answered ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body as Body;
  };

  const form = new FormData();
  form.append('file', new Blob([await png()], { type: 'image/png' }), 'me.png');
  const uploadUrl = ok('POST /upload', await api.call('POST', '/upload', u, { raw: form }), 200).url as string;
  const uploadPath = `tracking/${new URL(uploadUrl).pathname.replace(/^\/v2\/media\//, '')}`;

  const activityIds: string[] = [];
  for (const [i, startdate] of ['2024-05-02T07:00:05+02:00', '2024-05-01T06:30:00+00:00'].entries()) {
    const datastream: Body = {};
    const locations: Body = {};
    for (let s = 0; s < 5; s++) {
      datastream[String(s)] = { '1': 120 + s, '5': s * 3.5 };
      locations[String(s)] = { latitude: 50.6292 + s * 1e-4, longitude: 3.0573 + s * 1e-4, elevation: 21 + s };
    }
    const body = {
      name: `Run ${i}`,
      user: me(u),
      sport: '/v2/sports/121',
      startdate,
      duration: 4,
      dataSummaries: { '5': 14, '24': 4 },
      datastream,
      locations,
      ...(i === 0 ? { images: [uploadUrl] } : {}),
    };
    activityIds.push(ok('POST /activities', await api.call('POST', '/activities', u, { body })).id as string);
  }
  const measure = ok(
    'POST /user_measures',
    await api.call('POST', '/user_measures', u, {
      body: { user: me(u), datatype: '/v2/datatypes/181', value: 72500, date: '2024-05-01T08:30:00+02:00' },
      headers: { 'idempotency-key': `measure-${u.ldid}` },
    }),
  );
  const device = ok(
    'POST /user_devices',
    await api.call('POST', '/user_devices', u, {
      body: { serial: `SN-${u.ldid.slice(0, 8)}`, model: '/v2/device_models/1', firmware: '/v2/firmwares/2' },
    }),
  );
  const equipment = ok(
    'POST /user_equipments',
    await api.call('POST', '/user_equipments', u, {
      body: { category: 'shoes', brand: 'Kalenji', name: `Shoes of ${u.ldid}`, sportsAutoAssigned: ['/v2/sports/121'] },
    }),
  );
  const goal = ok(
    'POST /user_measure_goals',
    await api.call('POST', '/user_measure_goals', u, {
      body: { user: me(u), datatype: '/v2/datatypes/181', goal: 70000, startdate: '2024-04-01T00:00:00+02:00' },
    }),
  );
  const challenge = ok(
    'POST /user_challenges',
    await api.call('POST', '/user_challenges', u, {
      body: {
        name: 'May',
        targetDatatype: '/v2/datatypes/5',
        target: 20,
        startedAt: '2024-05-01T00:00:00Z',
        endedAt: '2024-06-01T00:00:00Z',
      },
    }),
  );
  const share = ok(
    'POST /share_activities',
    await api.call('POST', '/share_activities', u, {
      body: { user: me(u), activity: `/v2/activities/${activityIds[0]}` },
    }),
  );
  const requested = ok('POST /exports', await api.call('POST', '/exports', u));
  const done = await waitFor(
    async () => (await api.call('GET', `/exports/${requested.id}`, u)).body as Body,
    (e) => e.status === 'done' || e.status === 'failed',
  );
  if (done.status !== 'done') throw new Error(`export ${requested.id}: ${JSON.stringify(done)}`);
  // The jobs the activities caused: their records and their drawn thumbnails.
  await waitFor(
    async () =>
      (await db.selectFrom('user_records').select('id').where('user_id', '=', u.ldid).execute()).length > 0 &&
      (await Promise.all(activityIds.map((id) => filesIn(storageDir, `tracking/thumbnails/${id}`)))).every(
        (files) => files.length > 0,
      ),
    (ready) => ready,
  );
  // And the challenge's result (the records job of each run, and the challenge's own).
  await waitFor(
    async () => (await api.call('GET', `/user_challenges/${challenge.id}`, u)).body as Body,
    (c) => c.result === 28,
  );

  const place = async (status: 'pending' | 'approved') =>
    db
      .insertInto('places')
      .values({
        slug: `place-${status}-${u.ldid}`,
        name: `Court of ${u.ldid}`,
        geom: sql`ST_SetSRID(ST_MakePoint(3.0573, 50.6292), 4326)`,
        country: 'FR',
        created_by: u.id,
        status,
        address: null,
        city: null,
        province: null,
        email: null,
        phone: null,
        website: null,
        booking_url: null,
        social_username: null,
        external_place_id: null,
        partner: null,
        geojson: null,
      })
      .returning(['id', 'uuid'])
      .executeTakeFirstOrThrow();
  const pending = await place('pending');
  const approved = await place('approved');
  await mkdir(path.join(storageDir, `places/${pending.uuid}/357`), { recursive: true });
  await writeFile(path.join(storageDir, `places/${pending.uuid}/357/picture.png`), await png());
  await db
    .insertInto('place_edits')
    .values({ place_id: approved.id, created_by: u.id, fields: JSON.stringify({ name: 'Renamed' }) })
    .execute();
  const partner = await db
    .insertInto('partners')
    .values({
      slug: `partner-${u.ldid}`,
      title: 'Club',
      source: 'test',
      link: 'https://club.test',
      lat: 50.6,
      lng: 3.05,
      user_id: u.number,
      created_by: u.id,
    })
    .returning('id')
    .executeTakeFirstOrThrow();

  const thirdParty = await registerClient(db, {
    client_name: `app of ${u.ldid}`,
    redirect_uris: ['https://app.test/cb'],
    ownerAccountId: u.id,
  });
  const thirdPartyKey = (await issueApiKey(db, thirdParty.client_id, 'mine')).api_key;
  await recordConsent(db, u.id, thirdParty.client_id, ['tracking:read']);
  const firstParty = await registerClient(db, {
    client_name: `platform app by ${u.ldid}`,
    redirect_uris: ['https://platform.test/cb'],
    ownerAccountId: u.id,
    firstParty: true,
  });
  // Last, so no event of the writes above waits for a delivery.
  ok(
    'POST /user_web_hooks',
    await api.call('POST', '/user_web_hooks', u, {
      body: { user: me(u), url: 'https://hooks.example.test/sports', events: ['activity_create'] },
    }),
  );

  return {
    activityIds,
    uploadPath,
    uploadUrl,
    measureId: measure.id as string,
    deviceId: device.id as string,
    equipmentId: equipment.id as string,
    goalId: goal.id as number,
    challengeId: challenge.id as string,
    shareToken: share.id as string,
    exportId: requested.id as string,
    exportUrl: done.url as string,
    pendingPlaceUuid: pending.uuid,
    approvedPlaceId: approved.id,
    partnerId: partner.id,
    thirdPartyClient: thirdParty.client_id,
    thirdPartyKey,
    firstPartyClient: firstParty.client_id,
  };
}
