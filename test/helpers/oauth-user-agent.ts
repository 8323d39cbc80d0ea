import { createAccount } from '../../shared/accounts/accounts.ts';
import type { TestApi } from './app.ts';
import { CookieJar } from './tokens.ts';

/** Shared by the test/accounts-consent-*.test.ts files: a user's browser over fetch (not a test file itself). */

/** The password of the users `createUser` makes. */
export const PASSWORD = 'correct horse battery';

/** A browser of one user: cookies kept, redirects followed by hand (to see where they go). */
export class FetchUserAgent {
  readonly jar = new CookieJar();
  readonly baseUrl: string;
  constructor(baseUrl: string) {
    this.baseUrl = baseUrl;
  }
  async go(url: string, init: RequestInit = {}): Promise<Response> {
    const res = await fetch(new URL(url, this.baseUrl), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: this.jar.header() },
    });
    this.jar.store(res);
    return res;
  }
  /** Follows redirects on our own origin; stops at a page or at a redirect elsewhere. */
  async follow(url: string, init: RequestInit = {}): Promise<Response> {
    let res = await this.go(url, init);
    while (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get('location') ?? '', this.baseUrl);
      if (next.origin !== new URL(this.baseUrl).origin) return res;
      res = await this.go(next.href);
    }
    return res;
  }
  async post(action: string, form: Record<string, string>): Promise<Response> {
    return this.follow(action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });
  }
  /** Signs in on the page `res` shows; returns where it leads. */
  async signIn(res: Response, email: string): Promise<Response> {
    const html = await res.text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
    const action = /<form method="post" action="([^"]+\/login)"/.exec(html)?.[1];
    if (!action) throw new Error(`no sign-in form (HTTP ${res.status})`);
    return this.post(action, { csrf, email, password: PASSWORD });
  }
}

/** An /authorize URL asking every scope (admin included) unless `extra` says otherwise. */
export const authorizeUrl = (clientId: string, redirectUri: string, extra: Record<string, string> = {}) =>
  `/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: 'openid profile email tracking:read tracking:write admin',
    ...extra,
  })}`;

/** A new account with a random email and PASSWORD. */
export async function createUser(api: TestApi, roles: ('user' | 'staff')[] = ['user']) {
  const email = `u-${Math.random().toString(36).slice(2, 9)}@example.test`;
  const account = await createAccount(api.database.db, { email, password: PASSWORD, roles });
  return { ...account, email };
}
