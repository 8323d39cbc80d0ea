import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import test from 'ava';
import sharp from 'sharp';
import { RedisCluster } from '../scripts/cluster/redis.ts';
import { ConfigError, loadConfig } from '../shared/config.ts';
import { pingRedis, queuePrefix } from '../shared/queue/connection.ts';
import { DATATYPE } from '../shared/tracking/activities/data.ts';
import { drainOutbox } from './helpers/outbox.ts';
import { createPlace } from './helpers/places.ts';
import { startTrackingApi, type TrackingTestUser } from './helpers/tracking.ts';
import { activity } from './helpers/tracking-activities.ts';
import { WorkerProcess } from './helpers/worker-process.ts';

/**
 * The API and two worker processes on a Redis Cluster of 6 nodes (3 masters, 3 replicas);
 * a master is killed (SIGKILL) in the middle of the writes, its replica lagging behind. The
 * replica takes over, and every acknowledged write's jobs run, once in effect: the outbox keeps
 * what the failover loses (jobs and completions the master acknowledged but had not copied to
 * its replica): the reconciler relays again a lost job whose row is open, and a completed job
 * that comes back as waiting runs again, to no further effect.
 * Writes go through HTTP: activities (a records and a thumbnail job each) and place pictures
 * (a thumbnail job each).
 */
const ACTIVITIES = 120;
const PICTURES = 12;
const USERS = 8;
const CLIENTS = 4;

const cluster = await RedisCluster.start();
// Polls close together and a reconciler that looks for lost jobs after 2 s keep the test short.
const api = await startTrackingApi({ env: { REDIS_CLUSTER_NODES: cluster.nodesSetting, OUTBOX_POLL_MS: '50' } }).catch(
  async (error: unknown) => {
    await cluster.stop();
    throw error;
  },
);
const { db } = api.database;
const workerEnv = {
  REDIS_CLUSTER_NODES: cluster.nodesSetting,
  WORKER_QUEUES: 'records,thumbnails',
  OUTBOX_POLL_MS: '50',
  OUTBOX_RECONCILE_AFTER_S: '2',
};
const workers = [WorkerProcess.of(api.config, workerEnv), WorkerProcess.of(api.config, workerEnv)];
test.after.always(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await api.close();
  await cluster.stop();
});

test('REDIS_CLUSTER_NODES: a list of host:port; with it each queue gets a hash-tagged prefix', (t) => {
  t.deepEqual(loadConfig({ REDIS_CLUSTER_NODES: '127.0.0.1:7000, redis-b:7001,[::1]:7002' }).REDIS_CLUSTER_NODES, [
    { host: '127.0.0.1', port: 7000 },
    { host: 'redis-b', port: 7001 },
    { host: '::1', port: 7002 },
  ]);
  t.is(loadConfig({}).REDIS_CLUSTER_NODES, undefined);
  for (const bad of ['127.0.0.1', '127.0.0.1:0', 'a:70000', 'redis://a:7000', ','])
    t.throws(
      () => loadConfig({ REDIS_CLUSTER_NODES: bad }),
      { instanceOf: ConfigError, message: /REDIS_CLUSTER_NODES/ },
      bad,
    );
  t.is(queuePrefix('sb', 'records', false), 'sb', 'one server: unchanged');
  t.is(queuePrefix('sb', 'records', true), '{sb:records}');
  t.is(queuePrefix('{sb}', 'records', true), '{sb}', "the operator's own hash tag is kept");
});

test.serial(
  'on the cluster each queue has its own hash tag; /ready asks for every slot served; the dashboard reads every master',
  async (t) => {
    const { queues } = api.api.context;
    t.is(queues.prefixOf('records'), `{${api.config.QUEUE_PREFIX}:records}`);
    t.true(await pingRedis(queues.connection), 'the cluster serves every slot');
    const masters = new Set(
      await Promise.all(
        ['records', 'thumbnails', 'exports', 'webhooks', 'maintenance', 'recommendations'].map((q) =>
          cluster.masterOf(`{${api.config.QUEUE_PREFIX}:${q}}`),
        ),
      ),
    );
    t.log(`the 6 queues live on ${masters.size} of the 3 masters`);
    // The dashboard's Redis panel merges every master's INFO.
    const info = await new BullMQAdapter(queues.get('records')).getRedisInfo();
    t.regex(String(info), /redis_version:7/);
  },
);

test.serial(
  'a master killed in the middle of the writes: after the failover every acknowledged write took effect once',
  async (t) => {
    await Promise.all(workers.map((w) => w.started()));
    const users: TrackingTestUser[] = [];
    for (let i = 0; i < USERS; i++) users.push(await api.user());
    const staff = await api.account(['staff']);
    const picture = await sharp({
      create: { width: 64, height: 48, channels: 3, background: { r: 20, g: 90, b: 200 } },
    })
      .png()
      .toBuffer();
    // The master holding the records queue: the busiest one.
    const victim = await cluster.masterOf(`{${api.config.QUEUE_PREFIX}:records}`);
    const answers: number[] = [];
    const activityIds: string[] = [];
    const placeIds: string[] = [];
    let failover: Promise<{ ids: string[]; unknown: string[] }> | undefined;
    const started = Date.now();

    const postActivity = async (n: number) => {
      const u = users[n % USERS] as TrackingTestUser;
      const res = await api.call('POST', '/activities', u, {
        body: activity(u, {
          startdate: new Date(Date.UTC(2026, 0, 1) + n * 3_600_000).toISOString(),
          duration: 1800 + n,
          dataSummaries: { [DATATYPE.DISTANCE]: 5000 + n },
        }),
      });
      answers.push(res.status);
      if (res.status === 201) activityIds.push(res.body.id);
    };
    const postPicture = async () => {
      const place = await createPlace(api, staff.token, { activities: [{ sport_id: 121, tags: ['outdoor'] }] });
      const body = new FormData();
      body.append('file', new Blob([picture], { type: 'image/png' }), 'track.png');
      const res = await api.fetch(`/v1/places/${place.uuid}/activities/121/images`, {
        method: 'POST',
        headers: { authorization: `Bearer ${staff.token}` },
        body,
      });
      answers.push(res.status);
      if (res.status === 201) placeIds.push(place.uuid);
    };
    // A picture every few activities, so both kinds are written on either side of the failover.
    const writes = Array.from({ length: ACTIVITIES }, (_, n) => [
      () => postActivity(n),
      ...(n % (ACTIVITIES / PICTURES) === 0 ? [postPicture] : []),
    ]).flat();
    // The second half of the writes waits for the kill: writes on either side of it, however
    // fast the machine writes and relays.
    let killed = () => {};
    const masterKilled = new Promise<void>((resolve) => {
      killed = resolve;
    });
    /**
     * The worst failover: the master's replica is cut off while writes go on, then the master
     * dies once it acknowledged records jobs the replica never got; the promoted replica lacks
     * every job and completion of that stretch. Resolves with how many of the records jobs relayed
     * meanwhile the new master lacks or had to be relayed again.
     */
    const fault = async () => {
      const replica = await cluster.cutOffReplica(victim);
      const cutAt = new Date();
      const cutAfter = answers.length;
      // sent_at is the relay transaction's start, before its jobs were added: after the cut.
      const relayedSinceCut = async () =>
        (
          await db
            .selectFrom('outbox')
            .select('job_id')
            .where('queue', '=', 'records')
            .where('sent_at', '>', cutAt)
            .execute()
        ).map((r) => r.job_id);
      const deadline = Date.now() + 120_000;
      let ids = await relayedSinceCut();
      while (ids.length < 4 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        ids = await relayedSinceCut();
      }
      await cluster.kill(victim);
      killed();
      const killedAt = Date.now();
      cluster.thaw(replica);
      t.log(`replica ${replica} cut off after ${cutAfter} writes, master ${victim} killed after ${answers.length}`);
      await cluster.failedOver(victim);
      t.log(`replica promoted ${Date.now() - killedAt} ms after the kill, after ${answers.length} writes`);
      // Lost now, or relayed again by the reconciler by the end (it takes up what the new master lacks).
      const records = api.api.context.queues.get('records');
      const states = await Promise.all(ids.map((id) => records.getJobState(id)));
      return { ids, unknown: ids.filter((_, i) => states[i] === 'unknown') };
    };
    let next = 0;
    const client = async () => {
      while (next < writes.length) {
        if (next >= writes.length / 2) await masterKilled;
        await (writes[next++] as () => Promise<void>)();
        if (answers.length >= writes.length * 0.3) failover ??= fault().finally(killed);
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, client));
    const writtenMs = Date.now() - started;
    const cut = (await failover) ?? { ids: [], unknown: [] };
    t.log(`${writes.length} writes in ${writtenMs} ms`);
    t.deepEqual(
      answers.filter((s) => s !== 201),
      [],
      'every write acknowledged',
    );

    const topology = await cluster.topology();
    t.true(topology.find((n) => n.port === victim)?.failed, 'the killed master is marked failed');
    t.is(topology.filter((n) => n.role === 'master' && !n.failed).length, 3, 'its replica was promoted');

    const open = await drainOutbox(db);
    t.log(`all jobs done ${Date.now() - started} ms after the first write`);
    const said = (msg: string) => workers.reduce((n, w) => n + w.output.split(`"msg":"${msg}`).length - 1, 0);
    t.log(
      `the workers logged ${said('outbox relay pass failed')} failed relay passes, ${said('worker error')} worker errors, ` +
        `${said('job stalled')} stalled jobs, ${said('job failed')} failed attempts`,
    );
    t.is(open, 0, workers.map((w) => w.output.slice(-3_000)).join('\n---\n'));
    const relayedAgain = await db
      .selectFrom('outbox')
      .select('job_id')
      .where('queue', '=', 'records')
      .where('attempts', '>', 1)
      .where('job_id', 'in', cut.ids.length > 0 ? cut.ids : [''])
      .execute();
    const lost = new Set([...cut.unknown, ...relayedAgain.map((r) => r.job_id)]);
    t.log(
      `${lost.size} of the ${cut.ids.length} records jobs the master acknowledged after its replica was cut off were lost in the failover`,
    );
    t.true(lost.size > 0, 'the failover lost jobs the master had acknowledged');

    // Nothing lost from the outbox: one row per job the writes caused, none failed.
    const outbox = await db.selectFrom('outbox').select(['queue', 'job_name', 'attempts', 'failed_at']).execute();
    t.is(
      outbox.length,
      2 * ACTIVITIES + PICTURES,
      'a records and a thumbnail job per activity, a thumbnail per picture',
    );
    t.deepEqual(
      outbox.filter((r) => r.failed_at !== null),
      [],
      'no job failed',
    );
    t.log(`${outbox.filter((r) => r.attempts > 1).length} rows relayed again by the reconciler`);

    // The effects: each activity's records computed for its version and its thumbnail drawn, each
    // picture's thumbnail made.
    const activities = await db
      .selectFrom('activities')
      .leftJoin('activity_records_state as s', 's.activity_id', 'activities.id')
      .select(['activities.id', 'activities.version', 'activities.thumbnail', 's.version as recordsVersion'])
      .where('activities.id', 'in', activityIds)
      .execute();
    t.is(activities.length, ACTIVITIES);
    t.deepEqual(
      activities.filter((a) => a.recordsVersion !== a.version || a.thumbnail === null).map((a) => a.id),
      [],
      'records and a thumbnail for every activity',
    );
    const pictures = await db
      .selectFrom('place_activities as a')
      .innerJoin('places as p', 'p.id', 'a.place_id')
      .select(['p.uuid', 'a.thumbnail_path'])
      .where('p.uuid', 'in', placeIds)
      .execute();
    t.is(pictures.length, PICTURES);
    t.deepEqual(
      pictures.filter((p) => p.thumbnail_path === null).map((p) => p.uuid),
      [],
      'a thumbnail for every picture',
    );
    // Once in effect: each user's distance record is their best activity's, whatever ran twice.
    for (const [i, u] of users.entries()) {
      const record = await db
        .selectFrom('user_records')
        .select(['value'])
        .where('user_id', '=', u.ldid)
        .where('type', '=', 'all')
        .where('datatype_id', '=', DATATYPE.DISTANCE)
        .execute();
      t.deepEqual(
        record.map((r) => Number(r.value)),
        [5000 + (ACTIVITIES - USERS + i)],
        `user ${i}`,
      );
    }
    // The API sees the cluster whole again, and counts the queues' jobs on it.
    const ready = await api.fetch('/ready');
    t.is(ready.status, 200, await ready.text());
    const metrics = await (await api.fetch('/metrics')).text();
    t.regex(metrics, /^queue_jobs\{queue="thumbnails",state="completed"\} [1-9]/m);
  },
);
