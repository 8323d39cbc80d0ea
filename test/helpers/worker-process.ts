import { type ChildProcess, spawn } from 'node:child_process';
import type { Config } from '../../shared/config.ts';

/** `npm run worker` as its own process (workers/main.ts), which a test can SIGKILL. */
export class WorkerProcess {
  readonly child: ChildProcess;
  output = '';
  readonly exited: Promise<number | null>;

  constructor(env: Record<string, string>) {
    this.child = spawn(process.execPath, ['workers/main.ts'], {
      env: { ...process.env, LOG_LEVEL: 'info', MIGRATE_ON_START: 'false', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (d: Buffer) => {
      // Enough of the end to explain a failure.
      this.output = (this.output + d.toString()).slice(-200_000);
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  /** A worker on the API's database, Redis, key prefix and storage. */
  static of(config: Config, env: Record<string, string> = {}): WorkerProcess {
    return new WorkerProcess({
      DATABASE_URL: config.DATABASE_URL,
      REDIS_URL: config.REDIS_URL,
      QUEUE_PREFIX: config.QUEUE_PREFIX,
      STORAGE_DIR: config.STORAGE_DIR,
      PUBLIC_URL: config.PUBLIC_URL,
      ...env,
    });
  }

  /** Waits for its `workers started` line; the deadline only catches a hang (a busy machine loads modules slowly). */
  async started(timeoutMs = 120_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!/workers started/.test(this.output)) {
      if (this.child.exitCode !== null || Date.now() > end)
        throw new Error(`worker did not start:\n${this.output.slice(-5_000)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** SIGTERM (or another signal), then waits for the exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }
}
