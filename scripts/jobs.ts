import { parseArgs } from 'node:util';
import { createDb } from '../shared/db/database.ts';
import { createRedis, redisLocation, waitForReady } from '../shared/queue/connection.ts';
import { JobNotFailedError, listJobs, removeFailedJobs, retryFailedJobs } from '../shared/queue/failed-jobs.ts';
import { JOB_QUEUES } from '../shared/queue/jobs.ts';
import { reconcileNow } from '../shared/queue/outbox.ts';
import { checkOutboxEpoch } from '../shared/queue/outbox-epoch.ts';
import {
  isQueueName,
  JOB_STATES,
  type JobCountState,
  QUEUE_NAMES,
  type QueueName,
  QueueSet,
} from '../shared/queue/queues.ts';
import { queuesWithoutMarker } from '../shared/queue/redis-loss.ts';
import { runCli } from '../shared/runtime/cli.ts';

const USAGE = `usage: npm run jobs -- list|retry|remove --queue <queue> --state <state> [--id <job id>] [--limit <n>]
       npm run jobs -- reconcile [--queue <queue>] [--new-epoch]
  list     the newest jobs of the queue in that state (--state ${JOB_STATES.join('|')})
  retry    give failed jobs one more attempt (--state failed); their outbox rows are open again
  remove   delete failed jobs from Redis (--state failed); their outbox rows stay failed
  reconcile  look for the job of every open outbox row in Redis now and relay those Redis lost
           (after Redis lost its data); --new-epoch first relays every open row under new job ids
           (after a restore the database cannot tell: a file-level copy brought back in place)
  --queue  ${QUEUE_NAMES.join(', ')}
  --id     only this job (retry and remove act on every failed job of the queue without it)
  --limit  how many jobs list prints (default 100, at most 1000)
Prints JSON on stdout (docs/operations.md, "Failed jobs").`;

const COMMANDS = ['list', 'retry', 'remove', 'reconcile'] as const;
type Command = (typeof COMMANDS)[number];

const OPTIONS = {
  queue: { type: 'string' },
  state: { type: 'string' },
  id: { type: 'string' },
  limit: { type: 'string' },
  'new-epoch': { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
} as const;

function usage(problem: string): never {
  console.error(`${problem}\n${USAGE}`);
  process.exit(2);
}

/** The command line, checked: every problem is a usage error (exit 2) before anything connects. */
function parse() {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ options: OPTIONS, allowPositionals: true });
  } catch (error) {
    usage((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const [command, ...extra] = positionals;
  if (!command) usage('give a command: list, retry, remove or reconcile');
  if (!(COMMANDS as readonly string[]).includes(command)) usage(`unknown command "${command}"`);
  if (extra.length > 0) usage(`unexpected argument "${extra[0]}"`);
  if (command === 'reconcile') {
    if (values.state !== undefined || values.id !== undefined || values.limit !== undefined)
      usage('reconcile: only --queue and --new-epoch');
    if (values.queue !== undefined && !isQueueName(values.queue)) usage(`--queue: no queue "${values.queue}"`);
    return { command: 'reconcile' as const, queue: values.queue, newEpoch: values['new-epoch'] };
  }
  if (values['new-epoch']) usage(`${command}: --new-epoch is for reconcile`);
  if (!values.queue) usage('--queue is required');
  if (!isQueueName(values.queue)) usage(`--queue: no queue "${values.queue}"`);
  if (!values.state) usage('--state is required');
  if (!(JOB_STATES as readonly string[]).includes(values.state)) usage(`--state: no state "${values.state}"`);
  // Only failed jobs are retried or removed here: a waiting or delayed job removed would be
  // relayed again by the reconciler (its outbox row is open), and a completed one needs no retry.
  if (command !== 'list' && values.state !== 'failed') usage(`${command}: only --state failed`);
  if (command === 'list' && values.id !== undefined) usage('list: --id is for retry and remove');
  if (values.id !== undefined && values.id.trim() === '') usage('--id: empty');
  if (command !== 'list' && values.limit !== undefined) usage(`${command}: --limit is for list`);
  const limit = values.limit === undefined ? 100 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) usage('--limit: a whole number from 1 to 1000');
  return {
    command: command as Exclude<Command, 'reconcile'>,
    queue: values.queue,
    state: values.state as JobCountState,
    id: values.id,
    limit,
  };
}

/**
 * `npm run jobs`: lists jobs of a queue, retries or removes failed ones, as the queue dashboard
 * does (/admin/queues), for operators without a browser or with many jobs to handle.
 */
const args = parse();
await runCli(async (config) => {
  const queues = new QueueSet(createRedis(config, 'producer'), config.QUEUE_PREFIX);
  const { db } = createDb(config.DATABASE_URL, 2);
  try {
    if (!(await waitForReady(queues.connection, 5_000))) {
      console.error(`Cannot connect to ${redisLocation(config)}`);
      // ioredis keeps a reconnect attempt pending after disconnect(); nothing else is open yet.
      process.exit(2);
    }
    if (args.command === 'reconcile') {
      const epoch = await checkOutboxEpoch(db, args.newEpoch);
      const names = args.queue ? [args.queue as QueueName] : JOB_QUEUES;
      // Markers set first: the relays then see no loss to reconcile again (redis-loss.ts).
      await queuesWithoutMarker(queues, names);
      const result = await reconcileNow(db, queues, names);
      console.log(JSON.stringify({ epoch, ...result }, null, 2));
      return;
    }
    const queue = queues.get(args.queue);
    const base = { queue: args.queue, state: args.state };
    if (args.command === 'list') {
      console.log(JSON.stringify({ ...base, ...(await listJobs(queue, args.state, args.limit)) }, null, 2));
      return;
    }
    const result =
      args.command === 'retry' ? await retryFailedJobs(db, queue, args.id) : await removeFailedJobs(queue, args.id);
    console.log(JSON.stringify({ ...base, ...result }, null, 2));
    if (result.skipped.length > 0) process.exitCode = 1;
  } catch (error) {
    if (!(error instanceof JobNotFailedError)) throw error;
    console.error(error.message);
    process.exitCode = 1;
  } finally {
    await queues.close();
    queues.connection.disconnect();
    await db.destroy();
  }
});
