import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { accountsService } from '../api/accounts/index.ts';
import { job } from '../shared/queue/jobs.ts';
import { enqueueInTransaction } from '../shared/queue/outbox-write.ts';
import type { Processors } from '../workers/processor.ts';
import { startWorkers } from '../workers/worker.ts';
import { startTestApi, testConfig } from './helpers/app.ts';
import { launchBrowser } from './helpers/browser.ts';
import { FailingThumbnails, waitFor } from './helpers/failing-jobs.ts';
import { signIn } from './helpers/login-pages.ts';
import { createUser, PASSWORD } from './helpers/oauth-user-agent.ts';

// The queue dashboard in Debian's headless Chromium: a staff member signs in on the account page,
// opens /admin/queues, finds the failed job and retries it; the page renders under its own CSP,
// refusing nothing but cosmetic styles. The screenshots go to a temporary directory, removed after
// the run unless KEEP_SCREENSHOTS is set (to look at them).
const api = await startTestApi(null, { services: [accountsService] });
const thumbnails = new FailingThumbnails();
const workers = await startWorkers(
  testConfig({
    DATABASE_URL: api.database.url,
    QUEUE_PREFIX: api.config.QUEUE_PREFIX,
    WORKER_QUEUES: 'thumbnails',
    OUTBOX_POLL_MS: '20',
  }),
  { processors: thumbnails.processors as Partial<Processors> },
);
const browser = await launchBrowser();
const shots = await mkdtemp(path.join(tmpdir(), 'sb-dashboard-'));
test.after.always(async () => {
  await browser.close();
  await workers.close();
  await api.api.context.queues.get('thumbnails').obliterate({ force: true });
  await api.close();
  if (!process.env.KEEP_SCREENSHOTS) await rm(shots, { recursive: true, force: true });
});

/** What the page sees (the tests compile without the DOM's types). */
interface CspWatch {
  cspViolations: string[];
  document: {
    addEventListener(
      type: 'securitypolicyviolation',
      f: (e: { violatedDirective: string; blockedURI: string }) => void,
    ): void;
  };
}

test('staff open the dashboard in Chromium and retry a failed job', async (t) => {
  const { db } = api.database;
  thumbnails.broken.add(1);
  const failing = job('thumbnails', 'activity-thumbnail', { activityId: 1, imagePath: 'places/p/121/browser-1.png' });
  await enqueueInTransaction(db, failing);
  const rowOf = () => db.selectFrom('outbox').selectAll().where('job_id', '=', failing.jobId).executeTakeFirstOrThrow();
  t.true(await waitFor(async () => (await rowOf()).failed_at !== null));

  const staff = await createUser(api, ['staff']);
  const context = await browser.context();
  t.teardown(() => context.close());
  // Violations of the page's Content-Security-Policy, as the page itself reports them.
  await context.addInitScript(() => {
    const page = globalThis as unknown as CspWatch;
    page.cspViolations = [];
    page.document.addEventListener('securitypolicyviolation', (e) =>
      page.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  const page = await context.newPage();

  const refused = await page.goto(`${api.url}/admin/queues`);
  t.is(refused?.status(), 401);
  await page.getByRole('link', { name: 'Your account page' }).click();
  await signIn(page, staff.email, PASSWORD);
  await page.waitForURL((u) => u.pathname === '/account');
  // Signed in, nothing the dashboard asks for is refused.
  const failedRequests: string[] = [];
  page.on('response', (r) => {
    if (r.status() >= 400) failedRequests.push(`${r.status()} ${r.url()}`);
  });

  const opened = await page.goto(`${api.url}/admin/queues`);
  t.is(opened?.status(), 200);
  await page.getByText('1 Job').waitFor();
  await page.screenshot({ path: path.join(shots, 'overview.png'), fullPage: true });

  await page.getByRole('main').getByRole('link', { name: 'thumbnails' }).click();
  await page.getByText('FAILED', { exact: true }).click();
  await page.getByText('the original is missing').first().waitFor();
  const shot = path.join(shots, 'failed-job.png');
  await page.screenshot({ path: shot, fullPage: true });
  t.true((await stat(shot)).size > 10_000);
  t.log(`screenshots in ${shots}`);

  // The cause is fixed; the job's retry button puts it back in line and it completes.
  thumbnails.broken.delete(1);
  // The job's own retry button (an icon without an accessible name), not the queue's "Retry all".
  await page.locator('main button:has(svg.lucide-refresh-cw)').filter({ hasNotText: 'Retry all' }).click();
  await page.getByText('Are you sure that you want to retry this job?').waitFor();
  await page.screenshot({ path: path.join(shots, 'retry-confirm.png'), fullPage: true });
  await page.getByRole('button', { name: 'Confirm', exact: true }).click();
  t.true(await waitFor(async () => (await rowOf()).done_at !== null), 'the outbox row is done');
  t.is(await api.api.context.queues.get('thumbnails').getJobState(failing.jobId), 'completed');

  // Scripts, API calls and images all come from 'self'; the only things refused are styles the
  // page does not need: its loading placeholder's inline styles, an inline SVG's style, and the
  // web font it links from Google (docs/operations.md).
  const violations = await page.evaluate(() => (globalThis as unknown as CspWatch).cspViolations);
  const cosmetic = (v: string) => /^style-src-(elem|attr) (inline|https:\/\/fonts\.googleapis\.com\/)/.test(v);
  t.deepEqual(
    violations.filter((v) => !cosmetic(v)),
    [],
  );
  t.deepEqual(failedRequests, []);
});
