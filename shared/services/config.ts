import { type Config, loadConfig as loadDeclaredConfig } from '../config.ts';
import { SERVICE_SETTINGS } from './index.ts';

/** The configuration of a process: shared/config.ts's variables with the services' checks of theirs. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return loadDeclaredConfig(env, SERVICE_SETTINGS);
}
