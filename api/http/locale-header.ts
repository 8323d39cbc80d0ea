import { z } from 'zod';

/**
 * `Accept-Language`, declared by the operations whose answer it changes (place notes, sport
 * names), so generated clients offer it; any value is read as RFC 9110 says, a long one refused.
 */
export const acceptLanguageHeader = z.object({
  'accept-language': z
    .string()
    .max(500)
    .optional()
    .meta({ description: 'the languages the answer should be in, by preference (`fr-CA, fr;q=0.8, en;q=0.5`)' }),
});
