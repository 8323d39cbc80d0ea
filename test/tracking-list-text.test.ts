import test from 'ava';
import type { Context } from 'koa';
import type { z } from 'zod';
import type { HydraView, Page } from '../api/http/formats/format.ts';
import { hydraSerializer } from '../api/http/formats/hydra.ts';
import { effortFields, effortView } from '../api/tracking/activity-best-efforts.ts';
import { type ActivityLap, lapFields, lapView } from '../api/tracking/activity-laps.ts';
import { splitFields, splitsQuery, splitView, type UnitSplit } from '../api/tracking/activity-splits.ts';
import { type FieldsText, listText } from '../api/tracking/list-text.ts';
import { listQuery, sumupFields, sumupView } from '../api/tracking/user-sumups.ts';
import type { RankedEffort } from '../shared/tracking/records/best-effort-ranks.ts';
import type { UserSumup } from '../shared/tracking/sumups/read.ts';

// The lists written as text (api/tracking/list-text.ts) answer the bytes the Hydra format writes
// from their views, in JSON-LD and in plain JSON, whatever their values: checked item by item.

const app = { config: { PUBLIC_URL: 'https://api.example' } } as Parameters<typeof listText>[0];

function check<T, S extends z.ZodType>(
  t: import('ava').ExecutionContext,
  view: HydraView<T, S>,
  filters: readonly string[],
  fields: FieldsText<T>,
  result: Page<T> | T[],
  request: { path: string; querystring: string },
) {
  const text = listText(app, view, filters, fields);
  const ctx = {
    ...request,
    query: Object.fromEntries(new URLSearchParams(request.querystring)),
  } as unknown as Context;
  const page: Page<T> = Array.isArray(result)
    ? { items: result, page: 1, limit: Math.max(1, result.length), total: result.length }
    : result;
  const format = hydraSerializer(view, filters);
  const req = { baseUrl: app.config.PUBLIC_URL, ...request, query: ctx.query as Record<string, string> };
  t.is(text['application/ld+json'](result, ctx), JSON.stringify(format.collection(page, req)));
  const plain = format.alternates?.[0];
  t.is(text['application/json'](result), JSON.stringify(plain?.collection(page, req)));
}

test('statistics by period', (t) => {
  const row = (n: number, over: Partial<UserSumup> = {}): UserSumup => ({
    id: `s${n}`,
    user_id: 'u-1',
    type: 'month',
    period: '2026-03-01',
    sport_id: n % 2 ? 121 : null,
    datatype_id: 5,
    value: String(n * 1000.5),
    created_at: '2026-03-01T10:00:00+00:00',
    updated_at: '2026-03-02T10:00:00+00:00',
    ...over,
  });
  const items = [row(1), row(2), row(3, { value: '0', id: 'odd "id"/é', user_id: 'ü ser' }), row(4, { value: '1e21' })];
  const filters = Object.keys(listQuery.shape);
  for (const [page, total] of [
    [1, 4],
    [2, 250],
    [1, 0],
  ] as const)
    check(
      t,
      sumupView,
      filters,
      sumupFields,
      total ? { items, page, limit: 100, total } : { items: [], page, limit: 30, total },
      {
        path: '/v2/user_sumups',
        querystring: 'type=month&period[between]=2026-01-01..2026-12-01&exists[sport]=false&limit=100',
      },
    );
  check(
    t,
    sumupView,
    filters,
    sumupFields,
    { items, page: 1, limit: 30, total: 4 },
    { path: '/v2/user_sumups', querystring: '' },
  );
});

test('laps', (t) => {
  const lap = (index: number, over: Partial<ActivityLap> = {}): ActivityLap => ({
    activityId: 'a/1',
    index,
    start: (index - 1) * 600,
    duration: 600,
    movingTime: 590,
    distance: 1000.25 * index,
    summaries: new Map([
      [24, 600],
      [5, 1000.25],
      [9, 6001.5],
      [103, Number.NaN],
    ]),
    startdate: new Date(Date.UTC(2026, 4, 1, 8, 30, 0, 999) + index * 600_000),
    ...over,
  });
  check(t, lapView, [], lapFields, [lap(1), lap(2, { distance: null, summaries: new Map() })], {
    path: '/v2/activities/a%2F1/laps',
    querystring: '',
  });
  check(t, lapView, [], lapFields, [], { path: '/v2/activities/x/laps', querystring: '' });
});

test('splits', (t) => {
  const split = (index: number, over: Partial<UnitSplit> = {}): UnitSplit => ({
    activityId: 'a1',
    unit: 'km',
    index,
    distance: 1000,
    start: 301.449 * (index - 1),
    elapsedTime: 301.449,
    pace: 301.449,
    elevationChange: -4.25,
    averageHeartRate: 148.33,
    ...over,
  });
  const filters = Object.keys(splitsQuery.shape);
  check(
    t,
    splitView,
    filters,
    splitFields,
    [split(1), split(2, { elevationChange: null, averageHeartRate: null }), split(3, { distance: 512.3456 })],
    { path: '/v2/activities/a1/splits', querystring: 'unit=km' },
  );
  check(t, splitView, filters, splitFields, [split(1, { unit: 'mile', distance: 1609.344 })], {
    path: '/v2/activities/a1/splits',
    querystring: 'unit=mile&x=%22',
  });
});

test('best efforts', (t) => {
  const effort = (type: string, over: Partial<RankedEffort> = {}): RankedEffort => ({
    activityId: 'a1',
    sportId: 121,
    type,
    datatypeId: 24,
    value: 1490.5,
    startdate: '2026-05-01T06:30:00+00:00',
    rank: 1,
    ...over,
  });
  check(
    t,
    effortView,
    [],
    effortFields,
    [
      effort('distance.804m'),
      effort('distance.5000m', { rank: null }),
      effort('all', { datatypeId: 5, value: 21097.3 }),
    ],
    { path: '/v2/activities/a1/best_efforts', querystring: '' },
  );
});
