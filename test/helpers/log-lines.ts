import { Writable } from 'node:stream';

export type LogLine = Record<string, unknown>;

/** A pino destination keeping every line written to it, parsed, for a test to read. */
export function logSink(): { stream: Writable; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(...parseLogLines(String(chunk)));
      done();
    },
  });
  return { stream, lines };
}

/** The JSON log lines of a process's output (other lines, a probe's, are skipped). */
export function parseLogLines(output: string): LogLine[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}
