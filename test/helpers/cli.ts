import { spawn } from 'node:child_process';

export interface ScriptRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command ...args` with `env` over this process's environment; resolves once its output is read to the end. */
export function runCommand(
  command: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<ScriptRun> {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
  });
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/** Runs `node <script> ...args` (a path from the repo root, as npm runs it), as runCommand does. */
export function runScript(script: string, args: readonly string[], env: Record<string, string>): Promise<ScriptRun> {
  return runCommand(process.execPath, [script, ...args], env);
}
