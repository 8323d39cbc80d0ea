import { z } from 'zod';

/**
 * The place as the places API writes it, defined once (docs/places.md): a GeoJSON Feature whose
 * properties are listed here in the order the API writes them. The single-place answers are
 * built in JS typed by it (places.ts: a member missing or of another type does not compile), the
 * search's Features in SQL from its keys (search-sql.ts: a member without its SQL expression does
 * not compile), and /openapi.json documents it.
 */

export const userSchema = z.object({
  identifier: z.string(),
  first_name: z.string(),
  last_name: z.string(),
  staff: z.boolean(),
});

/** The creator as PUT's answer lists it (the places spec's update shape). */
export const updateUserSchema = z.object({
  user_id: z.string(),
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
    user: z
      .union([userSchema, z.array(updateUserSchema)])
      .nullable()
      .meta({ description: "the creator; in PUT's answer a list of one with `user_id` (the spec's update shape)" }),
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

export type PlaceFeature = z.output<typeof placeSchema>;
export type PlaceProperties = PlaceFeature['properties'];

const placeProperties = placeSchema.shape.properties.shape;

/** A search result: a subset of the place's members, in this order, its proximity always given. */
export const searchFeatureSchema = placeSchema.extend({
  properties: z.object({
    uuid: placeProperties.uuid,
    name: placeProperties.name,
    slug: placeProperties.slug,
    proximity: z
      .number()
      .meta({ description: 'km from user_origin (or origin, or the box centre) to the nearest point' }),
    external_place_id: placeProperties.external_place_id,
    contact_details: placeProperties.contact_details,
    address_components: placeProperties.address_components,
    activities: z.array(activitySchema.pick({ sport_id: true, tags: true, attributes: true })),
  }),
});

export type SearchFeatureProperties = z.output<typeof searchFeatureSchema>['properties'];
