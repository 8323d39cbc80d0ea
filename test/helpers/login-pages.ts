import type { ExecutionContext } from 'ava';
import type { Page } from 'playwright-core';

/** Shared by the test/accounts-browser-*.test.ts files: the login pages driven in Chromium (not a test file itself). */

/** Every visible form control has a label; the page has a language and one h1. */
export async function checkAccessible(t: { true: (v: boolean, m?: string) => void }, page: Page): Promise<void> {
  const unlabelled = await page
    .locator('input:not([type=hidden]), select')
    .evaluateAll((controls) =>
      controls
        .filter((c) => ((c as unknown as { labels: { length: number } | null }).labels?.length ?? 0) === 0)
        .map((c) => c.getAttribute('name') ?? '?'),
    );
  const report = {
    unlabelled,
    lang: await page.locator('html').getAttribute('lang'),
    h1: await page.locator('h1').count(),
  };
  t.true(report.unlabelled.length === 0, `unlabelled controls: ${report.unlabelled.join(', ')}`);
  t.true(report.lang === 'en' && report.h1 === 1, 'page has lang and one h1');
}

export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email', { exact: true }).fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/**
 * The consent page names the application (registered as "Browser test app" with `redirectUri`)
 * and what it asks; `allow` or deny it.
 */
export async function answerConsentPage(
  t: ExecutionContext,
  page: Page,
  redirectUri: string,
  decision: 'Allow' | 'Deny',
  asks: RegExp[],
): Promise<void> {
  await page.waitForURL((u) => u.pathname.startsWith('/interaction/'));
  t.regex(await page.title(), /Allow Browser test app\?/);
  const text = await page.locator('main').innerText();
  t.regex(text, /registered by a third party/);
  for (const ask of asks) t.regex(text, ask);
  t.regex(text, new RegExp(`sent back to ${new URL(redirectUri).origin.replaceAll('.', '\\.')}`));
  await checkAccessible(t, page);
  await page.getByRole('button', { name: decision }).click();
}
