import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import sharp from 'sharp';
import { launchBrowser, type TestBrowser } from './helpers/browser.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';

// The public share page in Debian's headless Chromium: what a person opening a shared link sees
// (the share's `url`, no credentials), and the same page read with the spec's API key.
const api = await startTrackingApi();
let browser: TestBrowser;
let shots: string;
test.before(async () => {
  browser = await launchBrowser();
  shots = await mkdtemp(path.join(tmpdir(), 'sb-share-shots-'));
});
test.after.always(async () => {
  await browser?.close();
  await api.close();
  if (shots) await rm(shots, { recursive: true, force: true });
});

/** A one-hour run at 1 Hz: a loop with heart rate, speed and elevation in its datastream. */
function hourLongRun(u: TrackingTestUser, name: string) {
  const datastream: Record<string, Record<string, number>> = {};
  const locations: Record<string, { latitude: number; longitude: number; elevation: number }> = {};
  for (let s = 0; s < 3600; s++) {
    const elevation = Math.round((40 + 15 * Math.sin(s / 600)) * 10) / 10;
    datastream[s] = {
      '1': Math.round(130 + 20 * Math.sin(s / 300)),
      '6': Math.round(10_000 + 2000 * Math.sin(s / 200)),
    };
    locations[s] = {
      latitude: Math.round((50.63 + 0.02 * Math.sin(s / 600)) * 1e6) / 1e6,
      longitude: Math.round((3.06 + 0.03 * Math.cos(s / 600) + s * 2e-6) * 1e6) / 1e6,
      elevation,
    };
  }
  return {
    name,
    user: `/v2/users/${u.ldid}`,
    sport: '/v2/sports/121',
    startdate: '2024-05-01T08:30:00+02:00',
    duration: 3600,
    dataSummaries: { '5': 10_012, '24': 3600, '9': 10_012, '4': 131.4, '3': 157.6, '23': 712 },
    datastream,
    locations,
  };
}

/** A shared run: the link its owner sends (`url`) and the API's URL of the share (read with a key). */
async function sharedPage(name: string): Promise<{ link: string; keyed: string }> {
  const u = await api.user();
  const created = await api.call('POST', '/activities', u, { body: hourLongRun(u, name) });
  if (created.status !== 201) throw new Error(`POST /activities: ${created.status} ${JSON.stringify(created.body)}`);
  const shared = await api.call('POST', '/share_activities', u, {
    body: { user: `/v2/users/${u.ldid}`, activity: `/v2/activities/${created.body.id}` },
  });
  if (shared.status !== 201) throw new Error(`POST /share_activities: ${shared.status}`);
  // The link as a person receives it, on this test server's address.
  const link = `${api.url}${new URL(shared.body.url).pathname}`;
  return { link, keyed: `${api.url}/v2/share_activities/${shared.body.id}` };
}

/** Opens a share page as a browser does (with the API key if asked), recording console errors and requests. */
async function open(url: string, withKey = false) {
  const context = await browser.context();
  if (withKey) await context.setExtraHTTPHeaders({ 'x-api-key': api.apiKey });
  const page = await context.newPage();
  await page.setViewportSize({ width: 1100, height: 900 });
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('request', (r) => requests.push(r.url()));
  const response = await page.goto(url);
  return { context, page, response, problems, requests };
}

test('the share link opens in a plain browser: track, pace, heart rate and elevation charts, no console error, no other request', async (t) => {
  const { link: url } = await sharedPage('Citadel loop');
  const { context, page, response, problems, requests } = await open(url);
  try {
    t.is(response?.status(), 200);
    t.regex(response?.headers()['content-type'] ?? '', /^text\/html/);
    await page.waitForSelector('body[data-charts-ready="true"]', { timeout: 15_000 });

    t.is(await page.locator('h1').textContent(), 'Citadel loop');
    t.is(await page.locator('html').getAttribute('lang'), 'en');
    // The track: an inline SVG with the line and its two markers, drawn at a real size.
    const track = page.locator('.map svg[aria-label="GPS track"]');
    t.is(await track.count(), 1);
    t.true((await track.locator('path').count()) >= 3, 'grid, casing and line');
    t.is(await track.locator('circle').count(), 2);
    const box = await track.boundingBox();
    t.true((box?.width ?? 0) > 500 && (box?.height ?? 0) > 250, JSON.stringify(box));

    // Three uPlot charts, each with pixels drawn on its canvas.
    for (const key of ['pace', 'heartRate', 'elevation']) {
      const chart = page.locator(`#plot-${key}[data-ready="true"]`);
      t.is(await chart.count(), 1, key);
      const inked = await chart.locator('canvas').evaluate((element) => {
        // No DOM types in this project's TypeScript: the canvas as far as it is used here.
        const canvas = element as unknown as {
          width: number;
          height: number;
          getContext(
            kind: '2d',
          ): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } | null;
        };
        const c = canvas.getContext('2d');
        if (!c) return 0;
        const { data } = c.getImageData(0, 0, canvas.width, canvas.height);
        let n = 0;
        for (let i = 3; i < data.length; i += 4) if ((data[i] as number) > 0) n++;
        return n;
      });
      t.true(inked > 500, `${key}: ${inked} inked pixels`);
    }
    // The summary with its units.
    const summary = await page.locator('.summary dl').innerText();
    t.regex(summary, /10\.01 km/);
    // A run: its average speed as a pace, heart rates in whole beats.
    t.regex(summary, /Average pace\s+6:00 \/km/);
    t.notRegex(summary, /km\/h/);
    t.regex(summary, /131 bpm/);
    t.regex(summary, /158 bpm/);
    t.notRegex(summary, /131\.4|157\.6/);
    t.regex(await page.locator('#title-pace').innerText(), /Pace \(min\/km\)/);
    // Hovering the pace chart reads the pace as m:ss (the run goes between about 5 and 7.5 min/km).
    await page.locator('#plot-pace .u-over').hover();
    const legend = await page.locator('#plot-pace .u-legend').innerText();
    t.regex(legend, /Pace\s*[5-7]:[0-5]\d min\/km/, legend);
    t.regex(summary, /1:00:00/);

    t.deepEqual(problems, []);
    t.deepEqual(
      requests.filter((r) => new URL(r).origin !== new URL(api.url).origin),
      [],
      'no request to another origin',
    );
    t.deepEqual(requests, [url], 'the page is self-contained: one request');

    const file = path.join(shots, 'share-page.png');
    await page.screenshot({ path: file, fullPage: true });
    t.true((await stat(file)).size > 30_000, 'a screenshot with content');
    const stats = await sharp(file).stats();
    const spread = stats.channels.slice(0, 3).map((c) => c.stdev);
    t.true(
      spread.every((s) => s > 10),
      `colour spread ${spread.join(', ')}`,
    );
    const meta = await sharp(file).metadata();
    t.true((meta.height ?? 0) > 1200, 'the whole page: track, summary and three charts');
  } finally {
    await context.close();
  }
});

test('a hostile activity name is shown as text and runs nothing in the browser', async (t) => {
  const name = `<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">`;
  const { context, page, problems, requests } = await open((await sharedPage(name)).link);
  try {
    await page.waitForSelector('body[data-charts-ready="true"]', { timeout: 15_000 });
    t.is(await page.locator('h1').textContent(), name);
    t.is(await page.evaluate(() => (globalThis as unknown as { pwned?: number }).pwned), undefined);
    t.is(await page.locator('img').count(), 0);
    t.deepEqual(problems, []);
    t.is(requests.length, 1);
  } finally {
    await context.close();
  }
});

test('the API key read shows the same page', async (t) => {
  const { keyed } = await sharedPage('Read with a key');
  const { context, page, response, problems } = await open(keyed, true);
  try {
    t.is(response?.status(), 200);
    await page.waitForSelector('body[data-charts-ready="true"]', { timeout: 15_000 });
    t.is(await page.locator('h1').textContent(), 'Read with a key');
    t.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('a revoked share no longer opens, by its link or with the key', async (t) => {
  const { link, keyed } = await sharedPage('Soon gone');
  const token = keyed.split('/').pop() as string;
  const owner = (await api.database.db
    .selectFrom('share_activities')
    .select('user_id')
    .where('token', '=', token)
    .executeTakeFirstOrThrow()) as { user_id: string };
  await api.database.db.deleteFrom('share_activities').where('user_id', '=', owner.user_id).execute();
  for (const [url, withKey] of [
    [link, false],
    [keyed, true],
  ] as const) {
    const { context, page, response } = await open(url, withKey);
    try {
      t.is(response?.status(), 404, url);
      if (!withKey) t.regex(await page.locator('h1').innerText(), /cannot be shown/);
    } finally {
      await context.close();
    }
  }
});
