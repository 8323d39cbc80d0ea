import { readFile } from 'node:fs/promises';
import test from 'ava';
import { sql } from 'kysely';
import { channelFromBytes } from '../shared/tracking/activities/binary.ts';
import { deadBandClimb, refreshComputedClimbs } from '../shared/tracking/activities/climb-store.ts';
import { ascentDescent } from '../shared/tracking/formats/summaries.ts';
import { startTrackingApi } from './helpers/tracking.ts';

// records:recompute (shared/tracking/activities/climb-store.ts): the climbs the service computed under the old rule (a 2 m dead band) are
// computed again from the stored elevation channel; a device's own totals are kept.

const api = await startTrackingApi();
test.after.always(() => api.close());
const { db } = api.database;

const round2 = (x: number) => Math.round(x * 100) / 100;

test('the dead band lost climb at every top; hysteresis keeps it', (t) => {
  // Up 9 m by 1 m steps, down 9, up 9: the dead band stops 1 m short of each top and each bottom.
  const values = [...Array.from({ length: 10 }, (_, i) => i), ...Array.from({ length: 10 }, (_, i) => 9 - i)];
  const series = Float64Array.from([...values, ...values.slice(1)]);
  t.deepEqual(deadBandClimb(series), { ascent: 16, descent: 16 });
  const now = ascentDescent(series);
  // The hysteresis loses nothing at a turn; the smoothing (as gpxpy) rounds each sharp top and bottom by 0.3 m.
  t.deepEqual(now && { ascent: round2(now.ascent), descent: round2(now.descent) }, { ascent: 16.8, descent: 16.8 });
});

test('refreshComputedClimbs: a computed pair is replaced (updatedAt moves, version does not), a device total kept, a second run changes nothing', async (t) => {
  const u = await api.user();
  const post = async (file: string) => {
    const bytes = await readFile(new URL(`fixtures/tracking/devices/${file}`, import.meta.url));
    const res = await api.call('POST', '/activities?sport=/v2/sports/168', u, {
      raw: bytes,
      headers: { 'content-type': 'application/octet-stream' },
    });
    if (res.status !== 201) throw new Error(JSON.stringify(res.body));
    return res.body.id as string;
  };
  const hike = await post('gpx/korita-zbevnica.gpx');
  const ride = await post('fit/davidfit.fit');
  const row = async (id: string) =>
    (
      await sql<{ s: Record<string, number>; version: number; updated_at: Date }>`
        select data_summaries as s, version, updated_at from activities where id = ${id}`.execute(db)
    ).rows[0];
  const fresh = await row(hike);
  // As stored before the rule changed: the old rule's figures on the same channel.
  const elevation = await sql<{ values: Buffer }>`
    select "values" from activity_stream_channels where activity_id = ${hike} and datatype_id = 14`.execute(db);
  const channel = channelFromBytes(elevation.rows[0]?.values as Buffer);
  const old = deadBandClimb(channel);
  await sql`update activities set data_summaries = data_summaries || ${JSON.stringify({
    18: round2(old?.ascent ?? 0),
    19: round2(old?.descent ?? 0),
  })}::jsonb, updated_at = now() - interval '1 day' where id = ${hike}`.execute(db);
  const rideBefore = await row(ride);
  t.is(rideBefore?.s['18'], 623, "the ride's session total");

  t.true((await refreshComputedClimbs(db)) >= 1);
  const after = await row(hike);
  // The new rule on the stored channel. The stored channel no longer knows where the file's tracks
  // began, so the step between korita's two tracks counts here (312.57 m) where a fresh import of
  // the file leaves it out (305.31 m): docs/tracking-activities.md says to import such files again.
  const now = ascentDescent(channel);
  t.is(after?.s['18'], round2(now?.ascent ?? 0));
  t.is(after?.s['19'], round2(now?.descent ?? 0));
  t.is(fresh?.s['18'], 305.31);
  t.is(after?.s['18'], 312.57);
  t.is(after?.version, fresh?.version);
  t.true((after?.updated_at.getTime() ?? 0) > Date.now() - 3_600_000);
  t.deepEqual(await row(ride), rideBefore);
  t.is(await refreshComputedClimbs(db), 0, 'nothing left to refresh');
});
