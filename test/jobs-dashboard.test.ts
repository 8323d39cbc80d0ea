import { createHmac } from 'node:crypto';
import test from 'ava';
import { accountsService } from '../api/accounts/index.ts';
import { envSchema, QUEUE_NAMES } from '../shared/config.ts';
import { job } from '../shared/queue/jobs.ts';
import { enqueueInTransaction } from '../shared/queue/outbox-write.ts';
import type { Processors } from '../workers/processor.ts';
import { startWorkers } from '../workers/worker.ts';
import { startTestApi, type TestApi, testConfig } from './helpers/app.ts';
import { FailingThumbnails, waitFor } from './helpers/failing-jobs.ts';
import { createUser, FetchUserAgent, PASSWORD } from './helpers/oauth-user-agent.ts';

// The queue dashboard's JSON API (bull-board, /admin/queues/api/...) as its page calls it: staff
// signed in on the account page see every queue and retry or remove failed jobs; anyone else is
// refused. Jobs fail for real in a worker (their handler throws). The page in Chromium:
// test/jobs-dashboard-browser.test.ts.
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
const { db } = api.database;
const thumbnailQueue = api.api.context.queues.get('thumbnails');
test.after.always(async () => {
  await workers.close();
  await thumbnailQueue.obliterate({ force: true });
  await api.close();
});

const rowOf = (jobId: string) =>
  db.selectFrom('outbox').selectAll().where('job_id', '=', jobId).executeTakeFirstOrThrow();

async function failedJob(activityId: number): Promise<string> {
  thumbnails.broken.add(activityId);
  const j = job('thumbnails', 'activity-thumbnail', { activityId, imagePath: `places/p/121/board-${activityId}.png` });
  await enqueueInTransaction(db, j);
  if (!(await waitFor(async () => (await rowOf(j.jobId)).failed_at !== null)))
    throw new Error(`job ${j.jobId} did not fail`);
  return j.jobId;
}

/** A browser of a user signed in on the account page (/account) with their password. */
async function signedIn(roles: ('user' | 'staff')[]): Promise<FetchUserAgent> {
  const user = await createUser(api, roles);
  const ua = new FetchUserAgent(api.url);
  const html = await (await ua.follow('/account')).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
  const res = await ua.go('/account/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf, email: user.email, password: PASSWORD }),
  });
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
  return ua;
}

const json = { accept: 'application/json' };
const put = (ua: FetchUserAgent, path: string) => ua.go(`/admin/queues/api/queues/${path}`, { method: 'PUT' });

test('nobody signed in: 401, a page pointing to /account for a browser, a problem document otherwise', async (t) => {
  const anonymous = new FetchUserAgent(api.url);
  const data = await anonymous.go('/admin/queues/api/queues', { headers: json });
  t.is(data.status, 401);
  t.regex(data.headers.get('content-type') ?? '', /application\/problem\+json/);
  t.regex(((await data.json()) as { detail: string }).detail, /Sign in on the account page \(\/account\)/);
  const page = await anonymous.go('/admin/queues', { headers: { accept: 'text/html' } });
  t.is(page.status, 401);
  t.regex(await page.text(), /<a href="\/account">/);
  t.is((await anonymous.go('/admin/queues/static/images/logo.svg')).status, 401, 'its assets too');
  t.is((await put(anonymous, 'thumbnails/retry/failed')).status, 401);
  // A bearer token is not a sign-in here (the dashboard is a page, not an API of ours).
  const { token } = await api.account(['staff']);
  const bearer = await anonymous.go('/admin/queues/api/queues', { headers: { authorization: `Bearer ${token}` } });
  t.is(bearer.status, 401);
});

test.serial('signed in without the staff role: 403, and nothing is retried', async (t) => {
  const jobId = await failedJob(1);
  const user = await signedIn(['user']);
  t.is((await user.go('/admin/queues', { headers: { accept: 'text/html' } })).status, 403);
  const data = await user.go('/admin/queues/api/queues', { headers: json });
  t.is(data.status, 403);
  t.regex(((await data.json()) as { detail: string }).detail, /Only staff/);
  t.is((await put(user, `thumbnails/${jobId}/retry`)).status, 403);
  t.is(await thumbnailQueue.getJobState(jobId), 'failed');
  await (await thumbnailQueue.getJob(jobId))?.remove();
});

test('staff see every queue; the page sets its own Content-Security-Policy', async (t) => {
  const staff = await signedIn(['staff']);
  const page = await staff.go('/admin/queues');
  t.is(page.status, 200);
  const csp = page.headers.get('content-security-policy') ?? '';
  t.regex(csp, /script-src 'self';/);
  t.regex(csp, /connect-src 'self'/);
  t.notRegex(csp, /unsafe-inline|unsafe-eval|https:/);
  t.regex(await page.text(), /<base href="\/admin\/queues\/"/);
  const data = await staff.go('/admin/queues/api/queues', { headers: json });
  t.is(data.status, 200);
  const { queues } = (await data.json()) as { queues: { name: string }[] };
  t.deepEqual(queues.map((q) => q.name).sort(), [...QUEUE_NAMES].sort());
});

test('the sign-in cookie is sent to the dashboard; signing out ends access, on the server too', async (t) => {
  const staff = await signedIn(['staff']);
  t.is((await staff.go('/admin/queues/api/queues')).status, 200);
  const kept = staff.jar.header();
  const html = await (await staff.follow('/account')).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
  const out = await staff.go('/account/logout', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf }),
  });
  // The browser's cookie path decides where it goes: every path, so /admin/queues sees it.
  t.true(out.headers.getSetCookie().some((c) => /^sb_account=;.*path=\/;/i.test(c)));
  t.is((await staff.go('/admin/queues/api/queues')).status, 401);
  // A copy of the cookie kept from before is refused: the sign-in ended on the server.
  t.is((await api.fetch('/admin/queues/api/queues', { headers: { cookie: kept } })).status, 401);
});

test.serial('staff retry a failed job: its outbox row is open again, then done', async (t) => {
  const jobId = await failedJob(2);
  const staff = await signedIn(['staff']);
  const listed = await staff.go('/admin/queues/api/queues?activeQueue=thumbnails&status=failed', { headers: json });
  const { queues } = (await listed.json()) as {
    queues: { name: string; counts: { failed: number }; jobs: { id: string; failedReason: string }[] }[];
  };
  const board = queues.find((q) => q.name === 'thumbnails');
  t.true((board?.counts.failed ?? 0) >= 1);
  t.like(
    board?.jobs.find((j) => j.id === jobId),
    { failedReason: 'the original is missing' },
  );

  // A change sent from another site is refused, whatever the cookie.
  const crossSite = await staff.go(`/admin/queues/api/queues/thumbnails/${jobId}/retry`, {
    method: 'PUT',
    headers: { 'sec-fetch-site': 'cross-site' },
  });
  t.is(crossSite.status, 403);
  t.is(await thumbnailQueue.getJobState(jobId), 'failed');

  thumbnails.broken.delete(2);
  const release = thumbnails.hold(2);
  const retried = await put(staff, `thumbnails/${jobId}/retry`);
  t.is(retried.status, 204);
  t.like(await rowOf(jobId), { failed_at: null, done_at: null });
  release();
  t.true(await waitFor(async () => (await rowOf(jobId)).done_at !== null));
  t.is(await thumbnailQueue.getJobState(jobId), 'completed');
});

test.serial('staff retry every failed job of a queue, or remove one', async (t) => {
  const [a, b, c] = [await failedJob(3), await failedJob(4), await failedJob(5)];
  const staff = await signedIn(['staff']);
  const removed = await put(staff, `thumbnails/${c}/clean`);
  t.is(removed.status, 204);
  t.is(await thumbnailQueue.getJobState(c), 'unknown');

  thumbnails.broken.delete(3);
  thumbnails.broken.delete(4);
  const all = await put(staff, 'thumbnails/retry/failed');
  t.is(all.status, 200);
  t.like(await all.json(), { retried: 2 });
  t.true(await waitFor(async () => (await rowOf(a)).done_at !== null && (await rowOf(b)).done_at !== null));
  // The removed job's row stays failed: the work was given up (outbox_failed_rows shows it).
  t.like(await rowOf(c), { done_at: null });
  t.not((await rowOf(c)).failed_at, null);
});

/** The account page's sign-in cookie as anyone holding `key` could make it (cookies' keygrip signature). */
async function forgedSignIn(on: TestApi, key: string): Promise<string> {
  const staff = await createUser(on, ['staff']);
  const value = `${staff.id}.${staff.token_version}.${Math.floor(Date.now() / 1000) + 600}`;
  const sig = createHmac('sha1', key).update(`sb_account=${value}`).digest('base64url');
  return `sb_account=${value}; sb_account.sig=${sig}`;
}

test('a sign-in cookie made from public data with the key is refused; in production with a published key, no sign-in is accepted', async (t) => {
  const publicKey = envSchema.shape.COOKIE_KEYS.parse(undefined);
  // The cookie as it was before sign-ins were kept on the server, signed with the very key this
  // process uses: the account id and token version are public, the sign-in is not (was: a 200).
  const here = await api.fetch('/admin/queues/api/queues', { headers: { cookie: await forgedSignIn(api, publicKey) } });
  t.is(here.status, 401);
  // Without the accounts service (it refuses to start with the default key in production).
  const production = await startTestApi(t, { services: [], env: { NODE_ENV: 'production' } });
  const cookie = await forgedSignIn(production, publicKey);
  const refused = await production.fetch('/admin/queues/api/queues', { headers: { cookie } });
  t.is(refused.status, 401);
  t.regex(((await refused.json()) as { detail: string }).detail, /COOKIE_KEYS/);
});
