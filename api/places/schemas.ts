import { z } from 'zod';

/** Documentation shapes for /openapi.json; the place itself is defined once, in shared/places/feature.ts. */
export { activitySchema, geometrySchema, placeSchema, userSchema } from '../../shared/places/feature.ts';
export const messageSchema = z.object({ message: z.literal('Deleted') });

/** Activity body: sport_id, tags, photo_reference and filter values as top-level keys. */
export const activityBody = z
  .object({
    sport_id: z.union([z.number().int(), z.string()]).optional(),
    tags: z.array(z.string()).optional(),
    photo_reference: z.string().nullable().optional(),
  })
  .catchall(z.unknown())
  .meta({ description: 'Filter values (difficulty, distance, surface...) are top-level keys' });
