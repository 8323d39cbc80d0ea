/** Server-rendered pages of the accounts service: plain HTML, no script, accessible forms. */
import { MIN_PASSWORD_LENGTH } from '../../shared/accounts/passwords.ts';
import { csrfInput } from './forms.ts';

export function escapeHtml(value: string): string {
  return value
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1b1d21}
main{max-width:26rem;margin:3rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 3px #0003}
h1{font-size:1.5rem;margin-top:0}label{display:block;font-weight:600;margin-top:1rem}
input,select{width:100%;box-sizing:border-box;padding:.5rem;font:inherit;border:1px solid #666;border-radius:4px}
input[aria-invalid=true]{border-color:#b00020}.field-error{color:#b00020;margin:.25rem 0 0}
.alert{color:#fff;background:#b00020;padding:.75rem;border-radius:4px}
button{margin-top:1.5rem;width:100%;padding:.6rem;font:inherit;font-weight:600;background:#0b57d0;color:#fff;border:0;border-radius:4px;cursor:pointer}
button.secondary{background:#fff;color:#0b57d0;border:1px solid #0b57d0}
:focus-visible{outline:3px solid #ffbf47;outline-offset:2px}.notice{background:#e6f4ea;padding:.75rem;border-radius:4px}h2{font-size:1.15rem;margin:.5rem 0}ul.apps{list-style:none;padding:0}ul.apps>li{border-top:1px solid #ddd;padding:.5rem 0}.hint{color:#555;font-size:.9rem;margin:.25rem 0 0}`;

export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)} · Sports backend</title>
<style>${STYLE}</style>
</head>
<body>
<main id="main">
${body}
</main>
</body>
</html>`;
}

export interface Field {
  name: string;
  label: string;
  type?: string;
  value?: string | undefined;
  autocomplete?: string;
  required?: boolean;
  hint?: string;
  error?: string | undefined;
  options?: Array<[string, string]>;
}

export function field(f: Field): string {
  const id = `f-${f.name}`;
  const described = [f.hint ? `${id}-hint` : '', f.error ? `${id}-error` : ''].filter(Boolean).join(' ');
  const attrs = [
    `id="${id}"`,
    `name="${escapeHtml(f.name)}"`,
    f.required ? 'required aria-required="true"' : '',
    f.autocomplete ? `autocomplete="${f.autocomplete}"` : '',
    described ? `aria-describedby="${described}"` : '',
    f.error ? 'aria-invalid="true"' : '',
  ]
    .filter(Boolean)
    .join(' ');
  const control = f.options
    ? `<select ${attrs}>${f.options
        .map(
          ([v, l]) =>
            `<option value="${escapeHtml(v)}"${v === (f.value ?? '') ? ' selected' : ''}>${escapeHtml(l)}</option>`,
        )
        .join('')}</select>`
    : `<input ${attrs} type="${f.type ?? 'text'}"${f.type === 'password' || f.value === undefined ? '' : ` value="${escapeHtml(f.value)}"`}>`;
  return `<label for="${id}">${escapeHtml(f.label)}${f.required ? '' : ' <span class="hint">(optional)</span>'}</label>
${f.hint ? `<p class="hint" id="${id}-hint">${escapeHtml(f.hint)}</p>` : ''}${control}
${f.error ? `<p class="field-error" id="${id}-error">${escapeHtml(f.error)}</p>` : ''}`;
}

export function alert(message: string | undefined): string {
  return message ? `<div class="alert" role="alert" id="form-error">${escapeHtml(message)}</div>` : '';
}

const GENDERS: Array<[string, string]> = [
  ['', 'Prefer not to say'],
  ['2', 'Female'],
  ['1', 'Male'],
  ['3', 'Other'],
];

export function loginPage(opts: {
  action: string;
  registerHref: string;
  abortAction?: string;
  clientName: string;
  csrf: string;
  email?: string;
  error?: string;
  notice?: string;
}) {
  return `<h1>Sign in</h1>
<p>to continue to <strong>${escapeHtml(opts.clientName)}</strong></p>
${opts.notice ? `<p role="status" class="notice">${escapeHtml(opts.notice)}</p>` : ''}${alert(opts.error)}
<form method="post" action="${escapeHtml(opts.action)}">
${csrfInput(opts.csrf)}
${field({ name: 'email', label: 'Email', type: 'email', value: opts.email ?? '', autocomplete: 'username', required: true })}
${field({ name: 'password', label: 'Password', type: 'password', autocomplete: 'current-password', required: true })}
<button type="submit">Sign in</button>
</form>
<p>No account yet? <a href="${escapeHtml(opts.registerHref)}">Create an account</a></p>
${opts.abortAction ? `<form method="post" action="${escapeHtml(opts.abortAction)}">${csrfInput(opts.csrf)}<button type="submit" class="secondary">Cancel</button></form>` : ''}`;
}

export function registerPage(opts: {
  action: string;
  loginHref?: string;
  csrf: string;
  values?: Record<string, string>;
  errors?: Record<string, string>;
  error?: string;
}) {
  const v = opts.values ?? {};
  const e = opts.errors ?? {};
  return `<h1>Create an account</h1>
${alert(opts.error ?? (Object.keys(e).length ? 'Some fields need your attention.' : undefined))}
<form method="post" action="${escapeHtml(opts.action)}" novalidate>
${csrfInput(opts.csrf)}
${field({ name: 'email', label: 'Email', type: 'email', value: v.email, autocomplete: 'email', required: true, error: e.email })}
${field({ name: 'password', label: 'Password', type: 'password', autocomplete: 'new-password', required: true, hint: `At least ${MIN_PASSWORD_LENGTH} characters.`, error: e.password })}
${field({ name: 'first_name', label: 'First name', value: v.first_name, autocomplete: 'given-name', required: true, error: e.first_name })}
${field({ name: 'last_name', label: 'Last name', value: v.last_name, autocomplete: 'family-name', required: true, error: e.last_name })}
${field({ name: 'gender', label: 'Gender', value: v.gender, options: GENDERS, error: e.gender })}
${field({ name: 'birth_date', label: 'Birth date', type: 'date', value: v.birth_date, autocomplete: 'bday', error: e.birth_date })}
${field({ name: 'country', label: 'Country', value: v.country, autocomplete: 'country', hint: 'Two letters, such as FR or US.', error: e.country })}
${field({ name: 'language', label: 'Language', value: v.language, autocomplete: 'language', hint: 'Two letters, such as en or fr.', error: e.language })}
<button type="submit">Create account</button>
</form>
${opts.loginHref ? `<p>Already have an account? <a href="${escapeHtml(opts.loginHref)}">Sign in</a></p>` : ''}`;
}

/** The consent page: which application, what it asks, where the user goes back to. */
export function consentPage(opts: {
  action: string;
  csrf: string;
  clientName: string;
  /** Origin of the redirect URI the user goes back to. */
  returnTo: string;
  /** What each asked scope lets the application do (already described). */
  asks: string[];
  /** The user already allowed this application some of it. */
  extending: boolean;
}) {
  return `<h1>Allow ${escapeHtml(opts.clientName)}?</h1>
<p><strong>${escapeHtml(opts.clientName)}</strong> is an application registered by a third party, not by this service. ${
    opts.extending ? 'It asks for more than you allowed before. ' : ''
  }If you allow it, it will be able to:</p>
<ul>
${opts.asks.map((a) => `<li>${escapeHtml(a)}</li>`).join('\n')}
</ul>
<p class="hint">You will then be sent back to <strong>${escapeHtml(opts.returnTo)}</strong>. You can withdraw this access at any time on <a href="/account">your account page</a>.</p>
<form method="post" action="${escapeHtml(opts.action)}">
${csrfInput(opts.csrf)}
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>`;
}

/** The account page's sign-in form (to manage the applications the user allowed). */
export function accountSignInPage(opts: { csrf: string; email?: string; error?: string; notice?: string }) {
  return `<h1>Your account</h1>
<p>Sign in to see and withdraw the applications you allowed.</p>
${opts.notice ? `<p role="status" class="notice">${escapeHtml(opts.notice)}</p>` : ''}${alert(opts.error)}
<form method="post" action="/account/login">
${csrfInput(opts.csrf)}
${field({ name: 'email', label: 'Email', type: 'email', value: opts.email ?? '', autocomplete: 'username', required: true })}
${field({ name: 'password', label: 'Password', type: 'password', autocomplete: 'current-password', required: true })}
<button type="submit">Sign in</button>
</form>`;
}

/** The applications a user allowed, each with what it may do and a button to withdraw it. */
export function accountAppsPage(opts: {
  csrf: string;
  email: string;
  notice?: string;
  apps: Array<{ clientId: string; name: string; asks: string[]; since: string }>;
}) {
  const apps = opts.apps.length
    ? `<ul class="apps">${opts.apps
        .map(
          (a) => `<li><h2>${escapeHtml(a.name)}</h2>
<p class="hint">Allowed on ${escapeHtml(a.since)}. It may:</p>
<ul>${a.asks.map((s) => `<li>${escapeHtml(s)}</li>`).join('')}</ul>
<form method="post" action="/account/apps/${encodeURIComponent(a.clientId)}/revoke">${csrfInput(opts.csrf)}<button type="submit" class="secondary" aria-label="Withdraw access of ${escapeHtml(a.name)}">Withdraw access</button></form></li>`,
        )
        .join('\n')}</ul>`
    : '<p>You have not allowed any third-party application.</p>';
  return `<h1>Applications you allowed</h1>
<p>Signed in as <strong>${escapeHtml(opts.email)}</strong>.</p>
${opts.notice ? `<p role="status" class="notice">${escapeHtml(opts.notice)}</p>` : ''}
${apps}
<form method="post" action="/account/sessions/end">${csrfInput(opts.csrf)}<button type="submit" class="secondary">Sign out everywhere</button></form>
<form method="post" action="/account/logout">${csrfInput(opts.csrf)}<button type="submit" class="secondary">Sign out</button></form>`;
}

/**
 * The sign-out confirmation (OpenID RP-initiated logout): `form` is oidc-provider's hidden form
 * (its id `op.logoutForm`, with the xsrf token), which the buttons submit.
 */
export function logoutPage(form: string): string {
  return page(
    'Sign out',
    `<h1>Sign out?</h1>
<p>You will be signed out of this sign-in service on this browser. Applications that stay signed in with your permission stay so until you withdraw them on your account page.</p>
${form}
<button autofocus type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>
<button class="secondary" type="submit" form="op.logoutForm">No, stay signed in</button>`,
  );
}

/** Shown after a sign-out when the application named no page to return to. */
export function signedOutPage(): string {
  return page('Signed out', '<h1>Signed out</h1>\n<p class="notice">You are signed out on this browser.</p>');
}
