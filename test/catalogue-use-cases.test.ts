import test from 'ava';
import { sql } from 'kysely';
import { groupBySlugOrId, listGroups } from '../shared/catalogue/groups.ts';
import { preferredLanguages } from '../shared/catalogue/locale.ts';
import { compileSportList, searchSports, sportByIdOrSlug } from '../shared/catalogue/sports.ts';
import { DomainError } from '../shared/errors.ts';
import { createTestDatabase } from './helpers/db.ts';

// The catalogue use cases and queries straight on a migrated, seeded database.

const database = await createTestDatabase();
const { db } = database;
test.after.always(() => database.drop());

const search = (over: Partial<Parameters<typeof searchSports>[1]>) =>
  searchSports(db, { languages: ['en'], page: 1, size: 100, ...over });

test('preferredLanguages: q ordering, regions dropped, unknown and q=0 skipped, English last', (t) => {
  t.deepEqual(preferredLanguages(undefined), ['en']);
  t.deepEqual(preferredLanguages('fr-CA'), ['fr', 'en']);
  t.deepEqual(preferredLanguages('de;q=0.2, fr-CA;q=0.9, ja'), ['fr', 'de', 'en']);
  t.deepEqual(preferredLanguages('en, fr'), ['en', 'fr']);
  t.deepEqual(preferredLanguages('fr;q=0, *'), ['en']);
  t.deepEqual(preferredLanguages('x'.repeat(500)), ['en']);
  t.deepEqual(preferredLanguages(`${'ja,'.repeat(20)}fr`), ['en']);
});

test('searchSports: accent- and case-insensitive in the served language only', async (t) => {
  const fr = await search({ q: 'COURSE A PIED', languages: ['fr', 'en'] });
  t.is(fr.items[0]?.id, 121, 'the exact name first, then the longer ones (the 10 km run...)');
  t.like(fr.items[0], { name: 'Course à pied', locale: 'fr' });
  for (const s of fr.items) t.regex(s.name, /^Course à pied/);
  t.is((await search({ q: 'course a pied' })).total, 0);
  const ski = await search({ q: 'ski' });
  t.is(ski.items[0]?.slug, 'skiing');
  t.is(ski.total, ski.items.length);
});

test('searchSports: filters combine; a blank or too long query is an invalid domain error', async (t) => {
  const r = await search({ tag: 'breaststroke', vendorId: 224, parentsOnly: true });
  t.deepEqual(
    r.items.map((s) => s.id),
    [274],
  );
  t.is((await search({ tag: 'breaststroke', vendorId: 66 })).total, 0);
  for (const q of ['  ', 'x'.repeat(101)]) {
    const e = await t.throwsAsync(search({ q }), { instanceOf: DomainError });
    t.is(e?.kind, 'invalid');
    t.is(e?.errors[0]?.path, 'query.q');
  }
});

test('sportByIdOrSlug and groupBySlugOrId: by id or slug, not found otherwise', async (t) => {
  t.deepEqual(await sportByIdOrSlug(db, 'running', ['en']), await sportByIdOrSlug(db, '121', ['en']));
  const e = await t.throwsAsync(sportByIdOrSlug(db, '0', ['en']), { instanceOf: DomainError });
  t.is(e?.kind, 'not_found');
  const g = await groupBySlugOrId(db, 'racket-sports', ['fr']);
  t.like(g, { id: 1002, name: 'Sports de raquette', locale: 'fr' });
  t.true(g.sports.includes(357));
  t.is((await listGroups(db, ['en'], 2, 4)).items.length, 2);
});

test('the folded names follow sports.names (trigger), and the name search can use the trigram index', async (t) => {
  await db
    .transaction()
    .execute(async (trx) => {
      await sql`update sports set names = names || '{"de": "Laufen"}'::jsonb where id = 121`.execute(trx);
      const rows = await trx.selectFrom('sport_search_names').selectAll().where('sport_id', '=', 121).execute();
      t.true(rows.some((r) => r.locale === 'de' && r.folded === 'laufen'));
      t.true(rows.some((r) => r.locale === 'fr' && r.folded === 'course a pied'));
      await sql`set local enable_seqscan = off`.execute(trx);
      const compiled = compileSportList(db, { q: 'ski', languages: ['en'], page: 1, size: 100 });
      const plan = await trx.executeQuery<{ 'QUERY PLAN': string }>({
        ...compiled,
        sql: `explain ${compiled.sql}`,
      });
      t.regex(plan.rows.map((r) => r['QUERY PLAN']).join('\n'), /sport_search_names_trgm_idx/);
      await sql`rollback`.execute(trx).catch(() => undefined);
      throw new Error('rollback');
    })
    .catch((e: Error) => {
      if (e.message !== 'rollback') throw e;
    });
});
