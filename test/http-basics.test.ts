import test from 'ava';
import { startTestApi } from './helpers/app.ts';

const ctx = await startTestApi(null);
test.after.always(async () => {
  await ctx.api.close();
  await ctx.database.drop();
});

test('/health answers ok', async (t) => {
  const res = await ctx.fetch('/health');
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { status: 'ok' });
});

test('/ready reports Postgres and Redis up', async (t) => {
  const res = await ctx.fetch('/ready');
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { status: 'ready', checks: { postgres: 'up', redis: 'up' } });
});
