import type { IncomingHttpHeaders } from 'node:http';
import { createLocalJWKSet, type JWK, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { hashSecret } from '../shared/accounts/secrets.ts';
import { tokenRefusal, tokenScopes } from '../shared/auth/token-rules.ts';
import { createDb, type Db } from '../shared/db/database.ts';
import { DomainError } from '../shared/errors.ts';
import { readActivityContent } from '../shared/tracking/activities/content-read.ts';
import { DATATYPE } from '../shared/tracking/activities/data.ts';
import { computeLaps } from '../shared/tracking/activities/laps.ts';
import { movingRuleFor, storedTrack } from '../shared/tracking/activities/moving-store.ts';
import {
  computeSplits,
  elevationFromTrack,
  SPLIT_UNITS,
  type SplitUnit,
} from '../shared/tracking/activities/splits.ts';
import { formatDateTime } from '../shared/tracking/dates.ts';
import { activityBestEfforts, effortDistance, effortName } from '../shared/tracking/records/best-effort-ranks.ts';
import { RESOLUTIONS, type Resolution } from '../shared/tracking/streams/downsample.ts';
import { readActivityStreams } from '../shared/tracking/streams/read.ts';
import { listSumups, type SumupFilter } from '../shared/tracking/sumups/read.ts';
import { findTrackingCredentials } from '../shared/tracking/users/credentials.ts';
import type { BareAnswer, BareRoute } from './bare-server.ts';

/**
 * The bare server's routes for the tracking reads (bench/bare-server.ts): the limit
 * tracking-sumups and tracking-streams hold the API to. Each request is checked as the API checks
 * it (a live x-api-key, an access token of ours verified once per process and then only its time
 * window, its account's state, key and user read by the same statement, the token's client being
 * the key's, the `tracking:read` scope), then runs the same statements through the same shared
 * functions and writes the same bytes from their rows by hand: no framework, middleware,
 * validation library, logging or metrics. Only the requests the benchmarks send are understood.
 * The child process learns the token issuer from BARE_TOKEN_ISSUER.
 */

const AUDIENCE = 'sports-api';
const PREFIX = '/v2';

let handle: Db | undefined;
/** The shared functions take a Db made by createDb: one pool, of the bare server's size. */
function database(): Db {
  handle ??= createDb(process.env.BARE_DATABASE_URL as string, Number(process.env.BARE_POOL_MAX)).db;
  return handle;
}

let keys: Promise<JWTVerifyGetKey> | undefined;
const verified = new Map<string, JWTPayload>();

async function claimsOf(db: Db, token: string): Promise<JWTPayload | undefined> {
  const now = Math.floor(Date.now() / 1000);
  const known = verified.get(token);
  if (known && typeof known.exp === 'number' && known.exp > now) return known;
  keys ??= db
    .selectFrom('signing_keys')
    .select('public_jwk')
    .execute()
    .then((rows) => createLocalJWKSet({ keys: rows.map((r) => r.public_jwk as JWK) }));
  try {
    const { payload, protectedHeader } = await jwtVerify(token, await keys, {
      algorithms: ['RS256'],
      issuer: process.env.BARE_TOKEN_ISSUER as string,
      audience: AUDIENCE,
      requiredClaims: ['sub', 'exp', 'iat', 'aud'],
    });
    if (protectedHeader.typ?.toLowerCase() !== 'at+jwt') return undefined;
    verified.set(token, payload);
    return payload;
  } catch {
    return undefined;
  }
}

/** The caller's tracking user id, or undefined when the request's credentials do not hold. */
async function callerOf(db: Db, headers: IncomingHttpHeaders): Promise<string | undefined> {
  const key = String(headers['x-api-key'] ?? '').trim();
  const token = /^Bearer\s+(\S+)\s*$/i.exec(String(headers.authorization ?? ''))?.[1];
  if (key.length < 10 || key.length > 200 || !token) return undefined;
  const claims = await claimsOf(db, token);
  if (!claims) return undefined;
  const clientId = typeof claims.client_id === 'string' ? claims.client_id : undefined;
  const found = await findTrackingCredentials(db, {
    keyHash: hashSecret(key),
    token: {
      sub: String(claims.sub),
      jti: typeof claims.jti === 'string' ? claims.jti : undefined,
      clientId,
      grantId: typeof claims.grant_id === 'string' ? claims.grant_id : undefined,
    },
  });
  if (!found?.key || !found.user || found.key.clientId !== clientId) return undefined;
  if (tokenRefusal('access', claims, found.state)) return undefined;
  if (!tokenScopes('access', claims, found.state).has('tracking:read')) return undefined;
  // The key's use is noted once a minute, as the API does.
  if (!found.key.last_used_at || Date.now() - found.key.last_used_at.getTime() > 60_000)
    await db.updateTable('api_keys').set({ last_used_at: new Date() }).where('id', '=', found.key.id).execute();
  return found.user.id;
}

const UNAUTHORIZED = { status: 401, body: '{"error":"unauthorized"}' };
const NOT_FOUND = { status: 404, body: '{"error":"not found"}' };

/** A read of the caller's data: the credentials, then `answer` with the caller's user id. */
function authorized(
  headers: IncomingHttpHeaders,
  answer: (db: Db, userId: string) => Promise<string | undefined>,
): BareAnswer<never> {
  return {
    contentType: 'application/ld+json',
    run: async () => {
      const db = database();
      const userId = await callerOf(db, headers);
      if (!userId) return UNAUTHORIZED;
      try {
        return (await answer(db, userId)) ?? NOT_FOUND;
      } catch (error) {
        if (error instanceof DomainError && error.kind === 'not_found') return NOT_FOUND;
        throw error;
      }
    },
  };
}

const str = JSON.stringify;

/** A list's `hydra:view` and `hydra:search` as the API writes them (api/http/formats/hydra.ts, links.ts). */
function collection(
  url: URL,
  type: string,
  members: string[],
  total: number,
  limit: number,
  page: number,
  filters: readonly string[],
): string {
  const path = url.pathname;
  const query = url.search.slice(1);
  const at = (n: number) => {
    const qs = new URLSearchParams(query);
    qs.set('page', String(n));
    if (!qs.has('limit')) qs.set('limit', String(limit));
    return `${path}?${qs}`;
  };
  const last = Math.max(1, Math.ceil(total / limit));
  const self = `${path}${query ? `?${query.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]/g, (c) => encodeURIComponent(c))}` : ''}`;
  let view = `{"@id":${str(self)},"@type":"hydra:PartialCollectionView","hydra:first":${str(at(1))},"hydra:last":${str(at(last))}`;
  if (page > 1) view += `,"hydra:previous":${str(at(page - 1))}`;
  if (page < last) view += `,"hydra:next":${str(at(page + 1))}`;
  view += '}';
  const search = filters.length
    ? `,"hydra:search":{"@type":"hydra:IriTemplate","hydra:template":${str(`${path}{?${filters.join(',')}}`)},"hydra:variableRepresentation":"BasicRepresentation","hydra:mapping":[${filters
        .map(
          (v) =>
            `{"@type":"IriTemplateMapping","variable":${str(v)},"property":${str(/^(?:order|exists)\[(.+)\]$/.exec(v)?.[1] ?? v.replace(/\[[^\]]*\]$/, ''))},"required":false}`,
        )
        .join(',')}]}`
    : '';
  return `{"@context":"${PREFIX}/contexts/${type}","@id":${str(path)},"@type":"hydra:Collection","hydra:member":[${members.join(',')}],"hydra:totalItems":${total},"hydra:view":${view}${search}}`;
}

/** The filters /v2/user_sumups declares, in its query schema's order (api/tracking/user-sumups.ts). */
const SUMUP_FILTERS = [
  'type',
  'type[]',
  'period',
  'period[]',
  'period[between]',
  'period[gt]',
  'period[gte]',
  'period[lt]',
  'period[lte]',
  'sport',
  'sport[]',
  'exists[sport]',
  'datatype',
  'datatype[]',
  'user',
  'user[]',
  'order[period]',
  'order[id]',
  'order[datatype.id]',
];

/** `/v2/user_sumups?type=month&period[between]=a..b&exists[sport]=false[&datatype=/v2/datatypes/N]&limit=L`. */
async function sumups(db: Db, userId: string, url: URL): Promise<string> {
  const q = url.searchParams;
  const between = q.get('period[between]')?.split('..') as [string, string] | undefined;
  const datatype = q.get('datatype');
  const filter: SumupFilter = {
    types: [q.get('type') as 'month'],
    ...(between ? { period: { between } } : {}),
    ...(q.has('exists[sport]') ? { hasSport: q.get('exists[sport]') === 'true' } : {}),
    ...(datatype ? { datatypes: [Number(datatype.slice(`${PREFIX}/datatypes/`.length))] } : {}),
  };
  const limit = Number(q.get('limit') ?? 30);
  const found = await listSumups(db, userId, filter, { page: 1, limit });
  const members = found.items.map(
    (s) =>
      `{"@id":${str(`${PREFIX}/user_sumups/${encodeURIComponent(s.id)}`)},"@type":"UserSumup","id":${str(s.id)},"type":${str(s.type)},"user":${str(`${PREFIX}/users/${encodeURIComponent(s.user_id)}`)},"sport":${s.sport_id === null ? 'null' : str(`${PREFIX}/sports/${s.sport_id}`)},"datatype":"${PREFIX}/datatypes/${s.datatype_id}","period":${str(s.period)},"value":${Number(s.value)},"createdAt":${str(s.created_at)},"updatedAt":${str(s.updated_at)}}`,
  );
  return collection(url, 'UserSumup', members, found.total ?? members.length, limit, 1, SUMUP_FILTERS);
}

const numbers = (values: ArrayLike<number>) => {
  let out = '[';
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    out += `${i ? ',' : ''}${Number.isNaN(v) ? 'null' : v}`;
  }
  return `${out}]`;
};

/** `/v2/activities/{id}/streams?resolution=R`, every channel. */
async function streams(db: Db, userId: string, id: string, url: URL): Promise<string> {
  const resolution = (url.searchParams.get('resolution') ?? 'full') as Resolution;
  if (!(resolution in RESOLUTIONS)) throw new Error('resolution');
  const s = await readActivityStreams(db, userId, id, { datatypes: undefined, resolution });
  const activity = `${PREFIX}/activities/${encodeURIComponent(id)}`;
  let out = `{"@context":"${PREFIX}/contexts/ActivityStreams","@id":${str(`${activity}/streams`)},"@type":"ActivityStreams","activity":${str(activity)},"resolution":"${resolution}","originalSize":${s.originalSize},"size":${s.elapsed.length},"elapsed":${numbers(s.elapsed)},"values":{`;
  let first = true;
  for (const [datatype, values] of s.channels) {
    out += `${first ? '' : ','}"${datatype}":${numbers(values)}`;
    first = false;
  }
  return `${out}}}`;
}

/** Summaries by datatype, keys in ascending order as a JS object writes integer keys. */
const summaries = (m: Map<number, number>) =>
  `{${[...m]
    .sort((a, b) => a[0] - b[0])
    .map(([k, v]) => `"${k}":${v}`)
    .join(',')}}`;

/** `/v2/activities/{id}/laps`. */
async function laps(db: Db, userId: string, id: string, url: URL): Promise<string | undefined> {
  const found = await readActivityContent(db, id, userId);
  if (!found) return undefined;
  const { content } = found;
  const all = computeLaps(content, await movingRuleFor(db, content.sportId));
  const activity = `${PREFIX}/activities/${encodeURIComponent(id)}`;
  const start = content.startdate.getTime();
  const members = all.map(
    (l) =>
      `{"@id":${str(`${activity}/laps#${l.index}`)},"@type":"ActivityLap","activity":${str(activity)},"index":${l.index},"startdate":"${formatDateTime(new Date(start + l.start * 1000))}","start":${l.start},"duration":${l.duration},"movingTime":${l.movingTime},"distance":${l.distance ?? 'null'},"dataSummaries":${summaries(l.summaries)}}`,
  );
  return collection(url, 'ActivityLap', members, members.length, Math.max(1, members.length), 1, []);
}

const tenth = (v: number) => Math.round(v * 10) / 10;
const tenthOrNull = (v: number | null) => (v === null ? 'null' : tenth(v));

/** `/v2/activities/{id}/splits?unit=U`. */
async function splits(db: Db, userId: string, id: string, url: URL): Promise<string> {
  const unit = (url.searchParams.get('unit') ?? 'km') as SplitUnit;
  const s = await readActivityStreams(db, userId, id, {
    datatypes: [DATATYPE.HR_CURRENT, DATATYPE.DISTANCE, DATATYPE.ELEVATION_CURRENT],
    resolution: 'full',
  });
  const elevation =
    s.channels.get(DATATYPE.ELEVATION_CURRENT) ?? elevationFromTrack(s.elapsed, await storedTrack(db, id));
  const all = computeSplits(
    {
      elapsed: s.elapsed,
      distance: s.channels.get(DATATYPE.DISTANCE),
      heartRate: s.channels.get(DATATYPE.HR_CURRENT),
      elevation,
    },
    unit,
  );
  const activity = `${PREFIX}/activities/${encodeURIComponent(id)}`;
  const members = all.map(
    (p) =>
      `{"@id":${str(`${activity}/splits?unit=${unit}#${p.index}`)},"@type":"ActivitySplit","activity":${str(activity)},"unit":"${unit}","index":${p.index},"distance":${p.distance === SPLIT_UNITS[unit] ? p.distance : tenth(p.distance)},"start":${tenth(p.start)},"elapsedTime":${tenth(p.elapsedTime)},"pace":${tenth(p.pace)},"elevationChange":${tenthOrNull(p.elevationChange)},"averageHeartRate":${tenthOrNull(p.averageHeartRate)}}`,
  );
  return collection(url, 'ActivitySplit', members, members.length, Math.max(1, members.length), 1, ['unit']);
}

/** `/v2/activities/{id}/best_efforts`. */
async function bestEfforts(db: Db, userId: string, id: string, url: URL): Promise<string> {
  const efforts = await activityBestEfforts(db, userId, id);
  const activity = `${PREFIX}/activities/${encodeURIComponent(id)}`;
  const members = efforts.map((e) => {
    const distance = effortDistance(e.type);
    return `{"@id":${str(`${activity}/best_efforts#${e.type}-${e.datatypeId}`)},"@type":"ActivityBestEffort","activity":${str(activity)},"sport":"${PREFIX}/sports/${e.sportId}","type":${str(e.type)},"name":${distance === null ? 'null' : str(effortName(distance))},"distance":${distance ?? 'null'},"datatype":"${PREFIX}/datatypes/${e.datatypeId}","value":${e.value},"elapsedTime":${distance === null ? 'null' : e.value},"startdate":${str(e.startdate)},"rank":${e.rank ?? 'null'}}`;
  });
  return collection(url, 'ActivityBestEffort', members, members.length, Math.max(1, members.length), 1, []);
}

const ACTIVITY_READ = /^\/v2\/activities\/([A-Za-z0-9_-]{1,64})\/(streams|laps|splits|best_efforts)$/;

/** The bare server's route: the tracking reads the benchmarks send. */
export function bareRoute(): BareRoute {
  return (url, headers) => {
    if (url.pathname === `${PREFIX}/user_sumups`) return authorized(headers, (db, userId) => sumups(db, userId, url));
    const m = ACTIVITY_READ.exec(url.pathname);
    if (!m) return undefined;
    const id = m[1] as string;
    const read = { streams, laps, splits, best_efforts: bestEfforts }[m[2] as 'streams'];
    return authorized(headers, (db, userId) => read(db, userId, id, url));
  };
}
