import { connect, type Socket } from 'node:net';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

/**
 * A pool of slowloris clients for the benchmarks: each connection sends a request line and then
 * its headers a few bytes at a time, never ending them, and is opened again as soon as the server
 * closes it, so the pool keeps its size. It runs in a worker thread: its sockets and timers would
 * otherwise share the event loop that times the load generator's requests.
 */

export interface SlowlorisOptions {
  /** The server's base URL (http://host:port). */
  url: string;
  connections: number;
  /** Pause between two pieces of a header. */
  trickleMs: number;
  /** The connections are first opened spread over this time, so that their timeouts are too. */
  rampMs: number;
}

export interface SlowlorisReport {
  /** Connections the server closed (the pool's own closing at stop() is not counted). */
  closedByServer: number;
  /** Of those, how many had an answer starting with `HTTP/1.1 408`. */
  answered408: number;
  /** Connect to server close, ms, of each connection the server closed. */
  lifetimesMs: number[];
  connectErrors: number;
  /** Connected sockets between measure() and stop(): the fewest, and the time-weighted mean. */
  minConnected: number;
  meanConnected: number;
}

export interface Slowloris {
  /** Starts the window over which minConnected and meanConnected are taken. */
  measure(): void;
  /** Closes every connection and reports. */
  stop(): Promise<SlowlorisReport>;
}

/** Starts the pool; resolves once the ramp is over and every connection has connected once. */
export async function startSlowloris(options: SlowlorisOptions): Promise<Slowloris> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { slowloris: options } });
  const next = () =>
    new Promise<unknown>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
  await next(); // 'ready'
  return {
    measure: () => worker.postMessage('measure'),
    stop: async () => {
      const report = next();
      worker.postMessage('stop');
      const result = (await report) as SlowlorisReport;
      await worker.terminate();
      return result;
    },
  };
}

// Endless header lines, sent a few bytes at a time.
const HEADER_TEXT = 'X-Slowloris: still-sending-headers\r\n';
const PIECE_BYTES = 4;

function runPool(options: SlowlorisOptions, port: NonNullable<typeof parentPort>): void {
  const target = new URL(options.url);
  const requestLine = `GET /api/v1/places?origin=2.35,48.85&radius=5 HTTP/1.1\r\nHost: ${target.host}\r\n`;
  const sockets = new Set<Socket>();
  const report: SlowlorisReport = {
    closedByServer: 0,
    answered408: 0,
    lifetimesMs: [],
    connectErrors: 0,
    minConnected: Number.POSITIVE_INFINITY,
    meanConnected: 0,
  };
  let stopping = false;
  let connected = 0;
  let initialConnected = 0;
  // Time-weighted mean of `connected` over the measured window.
  let measuredFrom: number | undefined;
  let lastChange = 0;
  let area = 0;
  const setConnected = (n: number) => {
    const now = performance.now();
    if (measuredFrom !== undefined) {
      area += connected * (now - lastChange);
      report.minConnected = Math.min(report.minConnected, n);
    }
    lastChange = now;
    connected = n;
  };

  const open = (initial: boolean) => {
    if (stopping) return;
    const socket = connect(Number(target.port), target.hostname);
    sockets.add(socket);
    let connectedAt: number | undefined;
    let answer = '';
    let offset = 0;
    let trickle: NodeJS.Timeout | undefined;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      if (answer.length < 64) answer += chunk;
    });
    socket.on('error', () => {
      if (connectedAt === undefined) report.connectErrors++;
    });
    socket.once('connect', () => {
      connectedAt = performance.now();
      setConnected(connected + 1);
      if (initial && ++initialConnected === options.connections) port.postMessage('ready');
      socket.write(requestLine);
      trickle = setInterval(() => {
        const piece = (HEADER_TEXT + HEADER_TEXT).slice(offset, offset + PIECE_BYTES);
        offset = (offset + PIECE_BYTES) % HEADER_TEXT.length;
        if (socket.writable) socket.write(piece);
      }, options.trickleMs);
    });
    socket.once('close', () => {
      clearInterval(trickle);
      sockets.delete(socket);
      if (connectedAt !== undefined) setConnected(connected - 1);
      if (stopping) return;
      if (connectedAt !== undefined) {
        report.closedByServer++;
        report.lifetimesMs.push(performance.now() - connectedAt);
        if (answer.startsWith('HTTP/1.1 408')) report.answered408++;
      }
      // A refused connect is retried after a pause rather than in a tight loop.
      if (connectedAt === undefined) setTimeout(() => open(initial), 100);
      else open(false);
    });
  };

  for (let i = 0; i < options.connections; i++)
    setTimeout(() => open(true), (i * options.rampMs) / options.connections);

  port.on('message', (message: string) => {
    if (message === 'measure') {
      measuredFrom = performance.now();
      lastChange = measuredFrom;
      report.minConnected = connected;
      area = 0;
    } else if (message === 'stop') {
      setConnected(connected); // closes the measured window's area
      const measuredMs = measuredFrom === undefined ? 0 : performance.now() - measuredFrom;
      report.meanConnected = measuredMs > 0 ? area / measuredMs : connected;
      if (!Number.isFinite(report.minConnected)) report.minConnected = connected;
      stopping = true;
      for (const socket of sockets) socket.destroy();
      port.postMessage(report);
    }
  });
}

if (!isMainThread && parentPort && workerData?.slowloris) runPool(workerData.slowloris as SlowlorisOptions, parentPort);
