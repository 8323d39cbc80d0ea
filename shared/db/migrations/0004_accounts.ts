import { type Kysely, sql } from 'kysely';

/**
 * Accounts carry every identity the services show (places `user`, partners `user_id`,
 * tracking `ldid` and User fields), and the signing keys of our own identity provider.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('number', 'bigserial', (c) => c.notNull().unique())
    .addColumn('ldid', 'text', (c) => c.notNull().unique().defaultTo(sql`replace(gen_random_uuid()::text, '-', '')`))
    .addColumn('email', 'text')
    .addColumn('password_hash', 'text')
    .addColumn('first_name', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('last_name', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('gender', 'smallint')
    .addColumn('birth_date', 'date')
    .addColumn('language', 'text')
    .addColumn('country', 'text')
    .addColumn('image_url', 'text')
    .addColumn('roles', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{user}'`))
    .addColumn('external_issuer', 'text')
    .addColumn('external_subject', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('accounts_roles_check', sql`roles <@ array['user', 'staff', 'partner']::text[]`)
    .execute();
  await sql`create unique index accounts_email_idx on accounts (lower(email)) where email is not null`.execute(db);
  await sql`create unique index accounts_external_idx on accounts (external_issuer, external_subject)
            where external_subject is not null`.execute(db);
  await db.schema
    .createTable('signing_keys')
    .addColumn('kid', 'text', (c) => c.primaryKey())
    .addColumn('alg', 'text', (c) => c.notNull())
    .addColumn('public_jwk', 'jsonb', (c) => c.notNull())
    .addColumn('private_jwk', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('retired_at', 'timestamptz')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('signing_keys').execute();
  await db.schema.dropTable('accounts').execute();
}
