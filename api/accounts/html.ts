/** Server-rendered pages of the accounts service: plain HTML, no script, accessible forms. */

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
