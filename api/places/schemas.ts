import { z } from 'zod';

/** Documentation shapes for /openapi.json (responses are built in shared/places). */
export const userSchema = z.object({
  identifier: z.string(),
  first_name: z.string(),
  last_name: z.string(),
  staff: z.boolean(),
});

export const activitySchema = z.object({
  sport_id: z.number().int(),
  tags: z.array(z.string()),
  photo_reference: z.string().nullable(),
  user: userSchema.nullable(),
  attributes: z.record(z.string(), z.union([z.number(), z.string()])),
  image: z.object({ url: z.string().optional(), thumbnail_url: z.string().nullable().optional() }),
});

export const geometrySchema = z
  .object({ type: z.enum(['Point', 'LineString', 'Polygon']), coordinates: z.array(z.unknown()) })
  .meta({ description: 'RFC 7946 geometry; positions are [longitude, latitude(, elevation)]' });

export const placeSchema = z.object({
  type: z.literal('Feature'),
  geometry: geometrySchema,
  properties: z.object({
    uuid: z.string(),
    name: z.string(),
    slug: z.string(),
    proximity: z.number().nullable(),
    user: userSchema.nullable(),
    partner: z.string().nullable(),
    featured: z.boolean(),
    status: z.enum(['pending', 'approved', 'rejected']),
    created_at: z.string().meta({ example: '2026-01-31 12:00:00 UTC' }),
    external_place_id: z.string().nullable(),
    contact_details: z.record(z.string(), z.string().nullable()),
    address_components: z.record(z.string(), z.string().nullable()),
    activities: z.array(activitySchema),
    notes: z.string().nullable(),
    pending_edits: z
      .array(
        z.object({
          user: userSchema.nullable(),
          fields: z.record(z.string(), z.string().nullable()).meta({ description: 'the changed fields, as in PUT' }),
          notes: z.record(z.string(), z.string()).meta({ description: 'locale to notes' }),
          submitted_at: z.string().meta({ example: '2026-01-31 12:00:00 UTC' }),
          revision: z
            .string()
            .meta({ description: 'changes with every change of the edit; approve names the one reviewed' }),
        }),
      )
      .meta({
        description:
          "changes of an approved place waiting for staff: the caller's own, every one for staff, none for others",
      }),
  }),
});

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
