import { z } from 'zod';
import type { ErrorFormat } from './error-format.ts';
import type { ResponseSpec } from './response-spec.ts';

const fieldErrors = z.array(z.object({ path: z.string(), message: z.string() }));

/** The documented body of an error, per service dialect (as error-format.ts renders them). */
const ERROR_BODIES: Record<ErrorFormat, { contentType: string; schema: z.ZodType }> = {
  problem: {
    contentType: 'application/problem+json',
    schema: z
      .object({
        type: z.string(),
        title: z.string(),
        status: z.number(),
        detail: z.string(),
        instance: z.string().meta({ description: 'the path of the request', example: '/api/v1/clients' }),
        errors: fieldErrors,
      })
      .meta({ id: 'Problem' }),
  },
  jsonapi: {
    contentType: 'application/vnd.api+json',
    schema: z
      .object({
        errors: z.array(
          z.object({
            status: z.string(),
            title: z.string(),
            detail: z.string(),
            source: z.object({ pointer: z.string().optional(), parameter: z.string().optional() }).optional(),
          }),
        ),
      })
      .meta({ id: 'JsonApiErrors' }),
  },
  hydra: {
    contentType: 'application/ld+json',
    schema: z
      .object({
        '@type': z.string(),
        'hydra:title': z.string(),
        'hydra:description': z.string(),
        violations: z.array(z.object({ propertyPath: z.string(), message: z.string() })).optional(),
      })
      .loose()
      .meta({ id: 'HydraError' }),
  },
};

/** An error response entry for /openapi.json in the service's own dialect. */
export function errorResponse(format: ErrorFormat, description: string): ResponseSpec {
  return { description, ...ERROR_BODIES[format] };
}
