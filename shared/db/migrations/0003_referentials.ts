import { type Kysely, sql } from 'kysely';

/** The one sports referential (all services share its ids), datatypes and the places tags/filters. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('universes')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('names', 'jsonb', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('sports')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('names', 'jsonb', (c) => c.notNull())
    .addColumn('parent_id', 'integer', (c) => c.references('sports.id'))
    .addColumn('universe_id', 'integer', (c) => c.references('universes.id'))
    .addColumn('active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('description', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('sports_parent_idx').on('sports').column('parent_id').execute();
  await db.schema
    .createTable('sport_groups')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('names', 'jsonb', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('sport_group_members')
    .addColumn('group_id', 'integer', (c) => c.notNull().references('sport_groups.id').onDelete('cascade'))
    .addColumn('sport_id', 'integer', (c) => c.notNull().references('sports.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('sport_group_members_pk', ['group_id', 'sport_id'])
    .execute();
  await db.schema
    .createTable('datatypes')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('unit', 'text', (c) => c.notNull())
    .addColumn('names', 'jsonb', (c) => c.notNull())
    .addColumn('descriptions', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('record_way', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('cumulable', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('place_tags')
    .addColumn('slug', 'text', (c) => c.primaryKey())
    .execute();
  await db.schema
    .createTable('place_filters')
    .addColumn('slug', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull().check(sql`type in ('number', 'level', 'enum')`))
    .addColumn('values', sql`text[]`)
    .execute();
  await db.schema
    .createTable('sport_place_tags')
    .addColumn('sport_id', 'integer', (c) => c.notNull().references('sports.id').onDelete('cascade'))
    .addColumn('tag_slug', 'text', (c) => c.notNull().references('place_tags.slug').onDelete('cascade'))
    .addPrimaryKeyConstraint('sport_place_tags_pk', ['sport_id', 'tag_slug'])
    .execute();
  await db.schema
    .createTable('sport_place_filters')
    .addColumn('sport_id', 'integer', (c) => c.notNull().references('sports.id').onDelete('cascade'))
    .addColumn('filter_slug', 'text', (c) => c.notNull().references('place_filters.slug').onDelete('cascade'))
    .addPrimaryKeyConstraint('sport_place_filters_pk', ['sport_id', 'filter_slug'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of [
    'sport_place_filters',
    'sport_place_tags',
    'place_filters',
    'place_tags',
    'datatypes',
    'sport_group_members',
    'sport_groups',
    'sports',
    'universes',
  ]) {
    await db.schema.dropTable(t).execute();
  }
}
