import pg from 'pg';

/**
 * Creates the database named in `url` when it does not exist (a fresh machine has only the
 * default ones), connecting to the `postgres` maintenance database to do it.
 */
export async function ensureDatabase(url: string): Promise<boolean> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) throw new Error('DATABASE_URL names no database');
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (rowCount) return false;
    try {
      await client.query(`create database "${name.replaceAll('"', '""')}"`);
    } catch (error) {
      // Another starter created it first.
      if ((error as { code?: string }).code !== '42P04') throw error;
    }
    return true;
  } finally {
    await client.end();
  }
}
