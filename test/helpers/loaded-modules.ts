import { registerHooks } from 'node:module';

/**
 * Preloaded with `--import` into a spawned entry point: prints, as the process exits, every
 * module under node_modules/@opentelemetry it resolved (import and require alike go through the
 * resolve hook) with the module that asked for it, so a test can tell what loaded OpenTelemetry.
 */
const seen = new Map<string, string>();
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    if (resolved.url.includes('/node_modules/@opentelemetry/') && !seen.has(resolved.url))
      seen.set(resolved.url, context.parentURL ?? '');
    return resolved;
  },
});
process.on('exit', () => {
  process.stdout.write(`\nOTEL_MODULES ${JSON.stringify([...seen].map(([url, parent]) => ({ url, parent })))}\n`);
});
