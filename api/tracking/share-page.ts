import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { runSteps } from '../../shared/runtime/paced-stream.ts';
import type { ActivityContent } from '../../shared/tracking/activities/data.ts';
import { DATATYPE } from '../../shared/tracking/activities/data.ts';
import {
  type ChartSeries,
  MIN_PACE_SPEED_KMH,
  type ShareCharts,
  shareChartsSteps,
} from '../../shared/tracking/shares/charts.ts';
import type { SharePageFacts, SummaryLine } from '../../shared/tracking/shares/store.ts';
import { placeholderSvg } from '../../shared/tracking/thumbnail/placeholder.ts';
import { trackSvgSteps } from '../../shared/tracking/thumbnail/track-svg.ts';
import { escapeHtml } from '../accounts/html.ts';

/** What the share page shows: the activity, and its sport and summary as the referentials name them. */
export interface SharePageInput extends SharePageFacts {
  name: string | null;
  startdate: Date;
  duration: number;
  content: ActivityContent;
}

// uPlot, read once from the installed package and inlined in every page: the page then needs no
// other request (it may be relayed by an app's server from another origin) and works offline.
const require = createRequire(import.meta.url);
const UPLOT_JS = readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8');
const UPLOT_CSS = readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8');

const PAGE_CSS = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1b1d21}
main{max-width:60rem;margin:0 auto;padding:1.5rem}
header h1{font-size:1.75rem;margin:0 0 .25rem;overflow-wrap:anywhere}.meta{color:#4a5560;margin:0}
section{background:#fff;border-radius:8px;box-shadow:0 1px 3px #0003;padding:1rem 1.25rem;margin-top:1.25rem}
h2{font-size:1.15rem;margin:0 0 .75rem}
.map svg{display:block;width:100%;height:auto;border-radius:6px}
.map figcaption{color:#4a5560;font-size:.9rem;margin-top:.5rem}figure{margin:0}
dl{display:grid;grid-template-columns:repeat(auto-fill,minmax(11rem,1fr));gap:.75rem;margin:0}
dl div{background:#f4f5f7;border-radius:6px;padding:.5rem .75rem}
dt{color:#4a5560;font-size:.85rem}dd{margin:0;font-size:1.2rem;font-weight:600}
.chart{margin-top:1rem}.chart h3{font-size:1rem;margin:0 0 .25rem}.chart .plot{min-height:250px}
.uplot{width:100%}.empty{color:#4a5560}`;

/**
 * Draws the charts from the JSON data block (a data block is not a script: the CSP does not have
 * to allow it, and no value in it can run). Marks each chart and then the body as ready.
 */
const PAGE_JS = `(() => {
  const data = JSON.parse(document.getElementById('share-data').textContent);
  const pad = (n) => String(n).padStart(2, '0');
  const clock = (s) => {
    s = Math.round(s);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    return h > 0 ? h + ':' + pad(m) + ':' + pad(sec) : m + ':' + pad(sec);
  };
  // Time ticks on round durations (seconds, minutes, hours) rather than uPlot's decimal steps.
  const STEPS = [1, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  const plots = [];
  const widthOf = (el) => Math.max(260, el.clientWidth);
  // A pace (minutes per km) reads as m:ss, and a faster pace is drawn higher.
  const pace = (min) => clock(min * 60);
  for (const chart of data.charts) {
    const el = document.getElementById('plot-' + chart.key);
    const isPace = chart.key === 'pace';
    const plot = new uPlot({
      width: widthOf(el),
      height: 220,
      scales: { x: { time: false }, y: isPace ? { dir: -1 } : {} },
      axes: [
        { incrs: STEPS, values: (u, ticks) => ticks.map(clock) },
        isPace ? { label: chart.unit, size: 60, values: (u, ticks) => ticks.map(pace) } : { label: chart.unit, size: 60 },
      ],
      series: [
        { label: 'Time', value: (u, v) => (v == null ? '-' : clock(v)) },
        {
          label: chart.label,
          stroke: chart.color,
          width: 2,
          value: (u, v) => (v == null ? '-' : (isPace ? pace(v) : v) + ' ' + chart.unit),
        },
      ],
    }, [chart.elapsed, chart.values], el);
    plots.push([plot, el]);
    el.dataset.ready = 'true';
  }
  addEventListener('resize', () => {
    for (const [plot, el] of plots) plot.setSize({ width: widthOf(el), height: 220 });
  });
  document.body.dataset.chartsReady = 'true';
})();`;

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/**
 * The page's Content-Security-Policy: nothing from anywhere (no origin at all, ours included)
 * but the two inline scripts and the one style sheet, each allowed by its hash.
 */
const POLICY = [
  "default-src 'none'",
  `script-src ${sha256(UPLOT_JS)} ${sha256(PAGE_JS)}`,
  `style-src ${sha256(UPLOT_CSS + PAGE_CSS)}`,
  "img-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
];
/** Sent as a header with the page (framing only by our own origin's pages). */
export const SHARE_PAGE_CSP = [...POLICY, "frame-ancestors 'self'"].join('; ');

interface ChartSpec {
  key: 'speed' | 'pace' | 'heartRate' | 'elevation';
  title: string;
  unit: string;
  color: string;
}
const SPEED_CHART: ChartSpec = { key: 'speed', title: 'Speed', unit: 'km/h', color: '#1c7ed6' };
const PACE_CHART: ChartSpec = { key: 'pace', title: 'Pace', unit: 'min/km', color: '#1c7ed6' };
const OTHER_CHARTS: ChartSpec[] = [
  { key: 'heartRate', title: 'Heart rate', unit: 'bpm', color: '#e03131' },
  { key: 'elevation', title: 'Elevation', unit: 'm', color: '#2b8a3e' },
];
/** Runners and walkers read a pace where others read a speed. */
const chartsFor = (pace: boolean): ChartSpec[] => [pace ? PACE_CHART : SPEED_CHART, ...OTHER_CHARTS];

const number = (value: number, digits: number) =>
  new Intl.NumberFormat('en', { maximumFractionDigits: digits }).format(value);

/** h:mm:ss. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return `${h}:${String(m).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/** A speed in m/h as a pace, `m:ss /km`; `-` when too slow to have one (standing). */
export function formatPace(metresPerHour: number): string {
  if (!(metresPerHour >= MIN_PACE_SPEED_KMH * 1000)) return '-';
  // Whole seconds first, so 359.6 s reads 6:00 and never 5:60.
  const seconds = Math.round(3_600_000 / metresPerHour);
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const clock = h > 0 ? `${h}:${String(m).padStart(2, '0')}` : String(m);
  return `${clock}:${String(seconds % 60).padStart(2, '0')} /km`;
}

/** The labels of the speeds shown as paces; another speed keeps its name. */
const PACE_LABELS: Record<number, string> = { [DATATYPE.SPEED_AVG]: 'Average pace', [DATATYPE.SPEED_MAX]: 'Best pace' };

/**
 * A summary value as a person reads it, from the referential's unit: durations as h:mm:ss,
 * speeds (stored in m/h) in km/h, or as a pace for foot sports, the distance in km, heart rates
 * in whole beats, booleans as yes/no, unit-less counts bare.
 */
export function formatSummaryValue(line: SummaryLine, pace = false): string {
  switch (line.unit) {
    case 's':
      return formatDuration(line.value);
    case 'm/h':
      return pace ? formatPace(line.value) : `${number(line.value / 1000, 1)} km/h`;
    case 'bpm':
      return `${number(line.value, 0)} bpm`;
    case 'm':
      return line.datatypeId === DATATYPE.DISTANCE
        ? `${number(line.value / 1000, 2)} km`
        : `${number(line.value, 0)} m`;
    case 'bool':
      return line.value ? 'yes' : 'no';
    case 'none':
    case '':
      return number(line.value, 2);
    default:
      return `${number(line.value, 2)} ${line.unit}`;
  }
}

/** The summary's first values, in this order (what a person looks for first); then the others by id. */
const SUMMARY_ORDER: number[] = [
  DATATYPE.DISTANCE,
  DATATYPE.SPEED_AVG,
  DATATYPE.SPEED_MAX,
  DATATYPE.HR_AVG,
  DATATYPE.HR_MAX,
  DATATYPE.ASCENT,
  DATATYPE.DESCENT,
  DATATYPE.CALORIES,
];
const summaryRank = (id: number) => {
  const at = SUMMARY_ORDER.indexOf(id);
  return at === -1 ? SUMMARY_ORDER.length : at;
};

const dateFormat = new Intl.DateTimeFormat('en-GB', { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' });

/** JSON that is safe inside a `<script>` element: no `<` (so no `</script>`), no line separators. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replaceAll('<', '\\u003c')
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029');
}

function chartSection(specs: ChartSpec[], charts: ShareCharts): string {
  return specs
    .map(({ key, title, unit }) => {
      const heading = `<h3 id="title-${key}">${title} (${unit})</h3>`;
      const body = charts[key]
        ? `<div class="plot" id="plot-${key}" role="img" aria-labelledby="title-${key}"></div>`
        : `<p class="empty">No ${title.toLowerCase()} recorded.</p>`;
      return `<div class="chart" id="chart-${key}">${heading}${body}</div>`;
    })
    .join('');
}

/**
 * The public page of a shared activity: its name and sport, the GPS track drawn as inline SVG
 * (projected here, no map tiles), the summary with units, and uPlot charts of speed, heart rate
 * and elevation over time. Every user-supplied string is escaped; the page loads nothing. The
 * policy is also in a meta element, so it still holds when an app relays the page without our
 * headers.
 */
export const sharePageHtml = (input: SharePageInput): string => runSteps(sharePageSteps(input));

/** `sharePageHtml`, yielding between slices of its work on the streams (shared/runtime/paced-stream.ts). */
export function* sharePageSteps(input: SharePageInput): Generator<void, string> {
  const title = input.name?.trim() || `${input.sportName} activity`;
  const hasTrack = input.content.track.elapsed.length > 0;
  const map = hasTrack
    ? `${yield* trackSvgSteps(input.content.track, { width: 960, height: 540 })}<figcaption>Start in green, finish in red.</figcaption>`
    : `${placeholderSvg(input.sportFamily, 960, 360)}<figcaption>No GPS track was recorded for this activity.</figcaption>`;
  const specs = chartsFor(input.pace);
  const charts = yield* shareChartsSteps(input.content, undefined, { pace: input.pace });
  const data = {
    charts: specs.flatMap(({ key, title, unit, color }) => {
      const series: ChartSeries | null = charts[key];
      return series ? [{ key, label: title, unit, color, elapsed: series.elapsed, values: series.values }] : [];
    }),
  };
  const summary = [
    { label: 'Duration', text: formatDuration(input.duration) },
    ...input.summary
      .filter((line) => line.datatypeId !== DATATYPE.DURATION)
      .sort((a, b) => summaryRank(a.datatypeId) - summaryRank(b.datatypeId) || a.datatypeId - b.datatypeId)
      .map((line) => ({
        label: (input.pace && line.unit === 'm/h' && PACE_LABELS[line.datatypeId]) || line.label,
        text: formatSummaryValue(line, input.pace),
      })),
  ]
    .map(({ label, text }) => `<div><dt>${escapeHtml(label)}</dt><dd>${escapeHtml(text)}</dd></div>`)
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<meta http-equiv="Content-Security-Policy" content="${POLICY.join('; ')}">
<title>${escapeHtml(title)}</title>
<style>${UPLOT_CSS}${PAGE_CSS}</style>
</head>
<body>
<main>
<header><h1>${escapeHtml(title)}</h1><p class="meta">${escapeHtml(input.sportName)} · ${escapeHtml(dateFormat.format(input.startdate))} UTC</p></header>
<section class="map" aria-labelledby="map-title"><h2 id="map-title">Track</h2><figure>${map}</figure></section>
<section class="summary" aria-labelledby="summary-title"><h2 id="summary-title">Summary</h2><dl>${summary}</dl></section>
<section class="charts" aria-labelledby="charts-title"><h2 id="charts-title">Over time</h2>${chartSection(specs, charts)}</section>
</main>
<script type="application/json" id="share-data">${scriptJson(data)}</script>
<script>${UPLOT_JS}</script>
<script>${PAGE_JS}</script>
</body>
</html>`;
}
