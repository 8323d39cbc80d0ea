import { Decoder, Stream } from '@garmin/fitsdk';
import { buildActivity } from './activity-builder.ts';
import { sportFromFit } from './file-sports.ts';
import { ImportError } from './import-error.ts';
import { type ImportedActivity, type ImportOptions, resolveSport } from './import-options.ts';
import { IMPORT_LIMITS } from './limits.ts';
import { PointCollector } from './point-collector.ts';
import type { DeclaredTotals } from './summaries.ts';

/**
 * FIT activity files, decoded by Garmin's SDK after its integrity check (header, size, CRC): a
 * truncated or corrupted file is refused, not imported in part. Records give the points
 * (positions in semicircles, enhanced altitude and speed preferred, heart rate merged from HR
 * messages by the SDK, cadence plus its fractional part, power, distance); lap messages end
 * laps; the first session gives the sport and, where the records are silent, the totals.
 * Developer fields are ignored.
 */

type Message = Record<string, unknown>;

const SEMICIRCLE_TO_DEGREES = 180 / 2 ** 31;

const num = (m: Message | undefined, key: string): number | undefined => {
  const v = m?.[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
};
const time = (m: Message | undefined, key: string): number => {
  const v = m?.[key];
  return v instanceof Date ? v.getTime() : Number.NaN;
};

/**
 * When a lap ends: its `timestamp`, as the FIT profile says, unless the writer set it to the lap's
 * `start_time` (some rowing apps and machines do): then `start_time + total_elapsed_time`.
 */
export function lapEnd(lap: Message): number {
  const end = time(lap, 'timestamp');
  const start = time(lap, 'startTime');
  const elapsed = num(lap, 'totalElapsedTime');
  if (!Number.isNaN(start) && !(end > start) && elapsed !== undefined) return start + elapsed * 1000;
  return end;
}

/** Refuses what is not a whole FIT file, saying which check failed. */
function checkFile(bytes: Uint8Array): void {
  if (bytes.length > IMPORT_LIMITS.maxFitBytes) {
    throw new ImportError(
      'too-large',
      `the file is ${bytes.length} bytes; FIT files are accepted up to ${IMPORT_LIMITS.maxFitBytes} bytes`,
    );
  }
  const headerSize = bytes[0] ?? 0;
  if (
    bytes.length < 12 ||
    (headerSize !== 12 && headerSize !== 14) ||
    String.fromCharCode(...bytes.subarray(8, 12)) !== '.FIT'
  ) {
    throw new ImportError('unsupported-format', 'the file is not a FIT file (no ".FIT" header)');
  }
  const dataSize = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(4, true);
  const expected = headerSize + dataSize + 2;
  if (expected > bytes.length) {
    throw new ImportError(
      'malformed',
      `the FIT header announces ${dataSize} bytes of records but the file holds ${bytes.length - headerSize} bytes after its header: it is truncated`,
    );
  }
}

export function importFit(bytes: Uint8Array, options: ImportOptions = {}): ImportedActivity {
  checkFile(bytes);
  const decoder = new Decoder(Stream.fromBuffer(bytes));
  if (!decoder.checkIntegrity()) {
    throw new ImportError('malformed', 'the FIT file fails its integrity check (size or CRC): it is damaged');
  }
  let decoded: ReturnType<Decoder['read']>;
  try {
    decoded = decoder.read({ includeUnknownData: false, decodeMemoGlobs: false });
  } catch (err) {
    throw new ImportError('malformed', `the FIT file cannot be decoded: ${(err as Error).message}`);
  }
  if (decoded.errors.length) {
    throw new ImportError('malformed', `the FIT file cannot be decoded: ${decoded.errors[0]?.message}`);
  }
  const messages = decoded.messages as Record<string, Message[] | undefined>;
  const fileType = messages.fileIdMesgs?.[0]?.type;
  if (fileType !== undefined && fileType !== 'activity') {
    throw new ImportError('no-activity', `the FIT file is a "${String(fileType)}" file, not an activity`);
  }
  const records = messages.recordMesgs ?? [];
  const sessions = messages.sessionMesgs ?? [];
  const session = sessions[0];
  if (!records.length && !session) {
    throw new ImportError('no-activity', 'the FIT file has neither records nor a session: there is no activity in it');
  }

  const points = new PointCollector();
  for (const r of records) {
    const lat = num(r, 'positionLat');
    const lon = num(r, 'positionLong');
    const cadence = num(r, 'cadence');
    points.add(time(r, 'timestamp'), {
      latitude: lat === undefined ? undefined : lat * SEMICIRCLE_TO_DEGREES,
      longitude: lon === undefined ? undefined : lon * SEMICIRCLE_TO_DEGREES,
      elevation: num(r, 'enhancedAltitude') ?? num(r, 'altitude'),
      heartRate: num(r, 'heartRate'),
      cadence: cadence === undefined ? undefined : cadence + (num(r, 'fractionalCadence') ?? 0),
      power: num(r, 'power'),
      speed: num(r, 'enhancedSpeed') ?? num(r, 'speed'),
      distance: num(r, 'distance'),
    });
  }
  // The last lap ends the activity: a record after it (a closing second some devices write) is in it.
  const lapEnds = (messages.lapMesgs ?? []).map(lapEnd);
  const lastRecord = time(records.at(-1), 'timestamp');
  if (lapEnds.length && lastRecord > (lapEnds.at(-1) as number)) lapEnds[lapEnds.length - 1] = lastRecord;
  for (const end of lapEnds) points.lapEndsAt(end);

  const warnings: string[] = [];
  if (sessions.length > 1)
    warnings.push(`the file's ${sessions.length} sessions were joined into one activity (the first one's sport)`);
  const { sportId, sportSource } = resolveSport(options, sportFromFit(session?.sport, session?.subSport));
  const start = time(session, 'startTime');
  const elapsedTotal = num(session, 'totalElapsedTime');
  const built = buildActivity(points, {
    format: 'FIT',
    sportId,
    name: null,
    declaredStart: start,
    // Only a file without records takes its length from the session: devices' totals can be wrong by units.
    declaredEnd: !records.length && elapsedTotal !== undefined ? start + elapsedTotal * 1000 : undefined,
    declared: sessionTotals(sessions),
  });
  return { format: 'fit', content: built.content, sportSource, warnings: [...warnings, ...built.warnings] };
}

/** Sums and maxima over the sessions; averages of the first (they are per sport). */
function sessionTotals(sessions: Message[]): DeclaredTotals {
  const sum = (key: string) => {
    const values = sessions.map((s) => num(s, key)).filter((v) => v !== undefined);
    return values.length ? values.reduce((a, b) => a + b, 0) : undefined;
  };
  const max = (...keys: string[]) => {
    const values = sessions.flatMap((s) => keys.map((k) => num(s, k))).filter((v) => v !== undefined);
    return values.length ? Math.max(...values) : undefined;
  };
  const first = sessions[0];
  return {
    distance: sum('totalDistance'),
    calories: sum('totalCalories'),
    ascent: sum('totalAscent'),
    descent: sum('totalDescent'),
    heartRateAvg: num(first, 'avgHeartRate'),
    heartRateMax: max('maxHeartRate'),
    speedMax: max('enhancedMaxSpeed', 'maxSpeed'),
    powerAvg: num(first, 'avgPower'),
    powerMax: max('maxPower'),
    cadenceAvg: num(first, 'avgCadence'),
    cadenceMax: max('maxCadence'),
  };
}
