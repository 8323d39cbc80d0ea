import { prng } from '../../bench/places-data.ts';
import { RUNNING, runSamples } from '../../bench/tracking-records-data.ts';
import { DATATYPE } from '../../shared/tracking/activities/data.ts';

/** Distinct recordings the posts rotate over. */
const VARIANTS = 4;
const FIRST_START = Date.UTC(2025, 0, 1);

/**
 * Bodies of POST /v2/activities like a watch uploads them: a run of `seconds` at 1 Hz with heart
 * rate, distance, speed, cadence and elevation, and a GPS point each second. The streams of a
 * few recordings are serialized once; each body gets its own name and start (an hour after the
 * previous body's), so the load generator spends its CPU on sending, not on JSON.
 */
export function activityBodies(seconds: number): (userIri: string) => string {
  const streams = Array.from({ length: VARIANTS }, (_, v) => recording(seconds, 1_000 + v));
  let n = 0;
  return (userIri) => {
    n++;
    const { distance, json } = streams[n % VARIANTS] as { distance: number; json: string };
    const startdate = new Date(FIRST_START + n * 3_600_000).toISOString().replace('.000Z', '+00:00');
    const head = JSON.stringify({
      name: `Soak run ${n}`,
      user: userIri,
      sport: `/v2/sports/${RUNNING}`,
      startdate,
      duration: seconds,
      dataSummaries: { [DATATYPE.DISTANCE]: distance, [DATATYPE.DURATION]: seconds },
    });
    return `${head.slice(0, -1)},${json}}`;
  };
}

/** `"datastream":{...},"locations":{...}` of one recording, and its distance. */
function recording(seconds: number, seed: number): { distance: number; json: string } {
  const s = runSamples(seconds, seed);
  const random = prng(seed);
  const datastream: Record<string, Record<string, number>> = {};
  const locations: Record<string, { latitude: number; longitude: number; elevation: number }> = {};
  let heartRate = 95;
  for (let i = 0; i < s.elapsed.length; i++) {
    const speed = i > 0 ? (s.distance[i] as number) - (s.distance[i - 1] as number) : 0;
    heartRate = Math.min(185, Math.max(90, heartRate + (random() - 0.45) * 2));
    const elevation = Math.round((s.elevation[i] as number) * 10) / 10;
    datastream[String(i)] = {
      [DATATYPE.HR_CURRENT]: Math.round(heartRate),
      [DATATYPE.DISTANCE]: Math.round((s.distance[i] as number) * 10) / 10,
      [DATATYPE.SPEED_CURRENT]: Math.round(speed * 3600),
      [DATATYPE.CADENCE_CURRENT]: speed > 0 ? 80 + Math.round(random() * 10) : 0,
      [DATATYPE.ELEVATION_CURRENT]: elevation,
    };
    locations[String(i)] = {
      latitude: Math.round((s.latitude[i] as number) * 1e7) / 1e7,
      longitude: Math.round((s.longitude[i] as number) * 1e7) / 1e7,
      elevation,
    };
  }
  const json = JSON.stringify({ datastream, locations }).slice(1, -1);
  return { distance: Math.round(s.distance.at(-1) as number), json };
}
