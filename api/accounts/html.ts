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
:focus-visible{outline:3px solid #ffbf47;outline-offset:2px}.hint{color:#555;font-size:.9rem;margin:.25rem 0 0}`;

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
}) {
  return `<h1>Sign in</h1>
<p>to continue to <strong>${escapeHtml(opts.clientName)}</strong></p>
${alert(opts.error)}
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
