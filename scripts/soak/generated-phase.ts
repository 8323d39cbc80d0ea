import { generatedRequestsAgainst } from '../load/generated-requests.ts';
import type { Phase, PhaseResult } from './phase.ts';

/**
 * The soak's second phase: SOAK_GENERATED_REQUESTS requests generated from /openapi.json
 * (scripts/load/generated-requests.ts), valid and invalid, from six kinds of caller in turn,
 * against the system the mix has just loaded. An error is a 5xx, a request left without an
 * answer, a 4xx outside its service's error format, a missing 401, or the API unhealthy after.
 */
export const generatedPhase: Phase = {
  name: 'generated requests',
  describe: ({ settings }) =>
    `${settings.generatedRequests} requests from /openapi.json at concurrency ${settings.concurrency}, ` +
    'callers staff, user, none, malformed bearer, another key, expired in turn',
  run: async ({ apiUrl, settings }): Promise<PhaseResult> => {
    const started = performance.now();
    const { seed, generated, health } = await generatedRequestsAgainst({
      baseUrl: apiUrl,
      databaseUrl: settings.databaseUrl,
      count: settings.generatedRequests,
      concurrency: settings.concurrency,
      ...(settings.seed === undefined ? {} : { seed: settings.seed }),
    });
    const seconds = (performance.now() - started) / 1000;
    const problems = [...generated.failures, ...health.map((h) => `after the requests: ${h}`)];
    return {
      errors: problems.length,
      report: () => [
        `${generated.sent} sent in ${seconds.toFixed(0)} s (${(generated.sent / seconds).toFixed(0)} req/s), seed ${seed} (SOAK_SEED=${seed} replays it)`,
        ...Object.entries(generated.statuses).map(
          ([caller, statuses]) =>
            `  ${caller.padEnd(22)} ${Object.entries(statuses)
              .map(([status, n]) => `${status}×${n}`)
              .join(' ')}`,
        ),
        ...(generated.transport.length
          ? [`  ${generated.transport.length} refused by Node's HTTP parser (request line over 16 KB)`]
          : []),
        `errors: ${problems.length}`,
        ...problems.slice(0, 20).map((p) => `  error: ${p}`),
      ],
    };
  },
};
