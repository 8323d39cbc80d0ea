import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import test from 'ava';
import {
  cookieKeysProblem,
  estimatedKeyBits,
  MIN_COOKIE_KEY_BITS,
  PUBLISHED_COOKIE_KEYS,
} from '../shared/auth/cookie-keys.ts';
import { envSchema } from '../shared/config.ts';

// Which COOKIE_KEYS production refuses (shared/auth/cookie-keys.ts): every value this repository
// prints is on the published list, and each is refused.

const ROOT = new URL('../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');
const published = () => {
  const files = [
    'README.md',
    '.env.example',
    'docker-compose.yml',
    'Dockerfile',
    ...readdirSync(new URL('docs/', ROOT))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  const values = new Set<string>();
  for (const file of files) {
    let text: string;
    try {
      text = read(file);
    } catch {
      continue;
    }
    for (const m of text.matchAll(/COOKIE_KEYS\s*[=:]\s*["']?([^\s"'`,|)]+)/g)) {
      const value = m[1] ?? '';
      // Values only, not a shell's `${COOKIE_KEYS:?}` or a `<placeholder>`.
      if (/^[A-Za-z0-9+/=_.-]{8,}$/.test(value)) values.add(value);
    }
  }
  return values;
};

test('every COOKIE_KEYS value printed in the repository and the default are published, and refused', (t) => {
  const printed = published();
  printed.add(envSchema.shape.COOKIE_KEYS.parse(undefined));
  for (const value of printed) {
    t.true(PUBLISHED_COOKIE_KEYS.includes(value), `${value} is on the published list`);
    t.regex(cookieKeysProblem(value) ?? '', /published.*openssl rand -base64 48/);
  }
});

test('short and predictable keys are refused; a random one of openssl rand -base64 48 is taken', (t) => {
  t.regex(cookieKeysProblem('x'.repeat(20)) ?? '', /shorter than 32/);
  t.regex(cookieKeysProblem('password'.repeat(5)) ?? '', /too predictable/);
  t.regex(cookieKeysProblem('0123456789'.repeat(4)) ?? '', /too predictable/);
  for (let i = 0; i < 50; i++) {
    const key = randomBytes(48).toString('base64');
    t.is(cookieKeysProblem(key), undefined);
    t.true(estimatedKeyBits(key) > 2 * MIN_COOKIE_KEY_BITS);
  }
  // A list: each key counts (the others still verify cookies).
  const good = randomBytes(48).toString('base64');
  t.is(cookieKeysProblem(`${good},${randomBytes(48).toString('base64')}`), undefined);
  t.regex(cookieKeysProblem(`${good},short`) ?? '', /key 2 of 2 is shorter/);
});
