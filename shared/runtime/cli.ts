import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';
import { ConfigError } from '../config.ts';
import { MigrationError } from '../db/migrate.ts';
import { loadConfig } from '../services/config.ts';

/**
 * Runs a CLI's main with a loaded configuration; configuration and migration problems print
 * one clear message (naming the variable) instead of a stack trace.
 */
export async function runCli(main: (config: ReturnType<typeof loadConfig>) => Promise<void>): Promise<void> {
  try {
    await main(loadConfig());
  } catch (error) {
    if (error instanceof ConfigError || error instanceof MigrationError) {
      console.error(error.message);
      process.exit(2);
    }
    const code = (error as { code?: string }).code;
    if (code === '3D000') {
      console.error(
        `${(error as Error).message}: run \`npm run migrate\` (it creates the database and applies the migrations)`,
      );
      process.exit(2);
    }
    if (code === 'ECONNREFUSED') {
      console.error(`Cannot connect: ${(error as Error).message}. Is PostgreSQL running? (see README, Quick start)`);
      process.exit(2);
    }
    throw error;
  }
}

/** Prints what is wrong and the usage on stderr, and exits with code 2 (a usage error). */
export function usageError(usage: string, problem: string): never {
  console.error(`${problem}\n${usage}`);
  process.exit(2);
}

/** The command line's options (no positionals), or a usage error naming what is wrong. */
export function parseOptions<const O extends ParseArgsOptionsConfig>(
  options: O,
  usage: string,
): ReturnType<typeof parseArgs<{ options: O; allowPositionals: false }>>['values'] {
  try {
    return parseArgs({ options, allowPositionals: false }).values;
  } catch (error) {
    return usageError(usage, (error as Error).message);
  }
}
