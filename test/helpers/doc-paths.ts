/**
 * The API paths the docs name, and how they differ from /openapi.json: a doc example copied into a
 * typed client must name a path, its method and its parameters as /openapi.json does.
 */

/** One use of a path in a doc: `GET /v2/x/{id}` in prose, a curl URL, or a client call. */
export interface DocPathUse {
  where: string;
  method: string | undefined;
  /** Segments: a literal, `{name}` (a named parameter) or `*` (a shell or template variable). */
  path: string;
  query: string[];
  /** Whether its parameters are named (`{id}`), so their names must be those of /openapi.json. */
  named: boolean;
}

export interface OpenApiPaths {
  paths: Record<string, Record<string, { parameters?: { in: string; name: string }[] }>>;
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
/** The one parameter of /openapi.json that spans several segments (stored files' paths). */
const REST_PARAMETER = 'path';
const PROSE = /`(GET|POST|PUT|PATCH|DELETE) (\/[^`\s]*)`/g;
const CLIENT_CALL = /\.(GET|POST|PUT|PATCH|DELETE)\(\s*'(\/[^']*)'/g;
// $BASE, ${BASE}, $API or a local origin, then the path (to a quote, space or closing bracket).
const URL_IN_CODE = /(?:\$\{?([A-Z][A-Z0-9_]*)\}?|https?:\/\/(?:localhost|127\.0\.0\.1):3000)(\/[^\s"'`)\\]*)/g;
const ASSIGNMENT =
  /^\s*(?:export\s+)?([A-Z][A-Z0-9_]*)=["']?(?:https?:\/\/[^\s"'/]+|\$\{?BASE\}?)(\/[^\s"']*)?["']?\s*$/;

function splitQuery(raw: string): { path: string; query: string[] } {
  const [path = '', search] = raw.replace(/[#>;,.:]+$|#.*$/, '').split('?', 2);
  const query = search
    ? [...new URLSearchParams(search.replaceAll('$', '')).keys()].map((k) => decodeURIComponent(k))
    : [];
  return { path: path.replace(/\/$/, '') || '/', query };
}

/** A concrete path's variable segments (`$ID`, `${id}`, `<id>`) become `*`. */
const wildcards = (path: string) =>
  path
    .split('/')
    .map((s) => s.replace(/^(\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|<[^>]*>)/, '*'))
    .join('/');

/** Every path use in one markdown document. */
export function docPathUses(file: string, text: string): DocPathUse[] {
  const uses: DocPathUse[] = [];
  const prefixes = new Map<string, string>([['BASE', '']]);
  let inCode = false;
  // A shell command continued over several lines (`\` at the end) is read as one, at its first line.
  const lines: { line: string; at: number }[] = [];
  let open: { line: string; at: number } | undefined;
  text.split('\n').forEach((line, i) => {
    open = open ? { line: `${open.line} ${line}`, at: open.at } : { line, at: i + 1 };
    if (open.line.endsWith('\\')) open.line = open.line.slice(0, -1);
    else {
      lines.push(open);
      open = undefined;
    }
  });
  for (const { line, at } of lines) {
    const where = `${file}:${at}`;
    if (line.trimStart().startsWith('```')) {
      inCode = !inCode;
      continue;
    }
    for (const m of line.matchAll(PROSE)) {
      // "There is no `DELETE /v2/users/{id}`": a path the docs say is absent.
      if (line.slice(0, m.index).endsWith('no ')) continue;
      // `<id>` names a parameter as `{id}` does; `...` stands for any rest.
      const { path, query } = splitQuery((m[2] ?? '').replace(/<([^>]+)>/g, '{$1}').replace('/...', '/*'));
      uses.push({ where, method: m[1], path, query, named: true });
    }
    if (!inCode) continue;
    const assignment = ASSIGNMENT.exec(line);
    if (assignment?.[1]) prefixes.set(assignment[1], assignment[2] ?? '');
    for (const m of line.matchAll(CLIENT_CALL)) {
      const { path, query } = splitQuery(m[2] ?? '');
      uses.push({ where, method: m[1], path, query, named: true });
    }
    if (assignment) continue;
    for (const m of line.matchAll(URL_IN_CODE)) {
      const variable = m[1];
      if (variable !== undefined && !prefixes.has(variable)) continue;
      const { path, query } = splitQuery(`${variable ? prefixes.get(variable) : ''}${m[2] ?? ''}`);
      const flag = /(?:-X|--request)\s+([A-Z]+)/.exec(line)?.[1];
      const sendsBody = /\s(?:-d|--data[a-z-]*|-F|--form|-T)\s/.test(line);
      const curl = /\bcurl\b/.test(line);
      const method = flag && METHODS.includes(flag) ? flag : curl ? (sendsBody ? 'POST' : 'GET') : undefined;
      uses.push({ where, method, path: wildcards(path), query, named: false });
    }
  }
  return uses;
}

const segmentsOf = (path: string) => path.split('/').filter(Boolean);

/** Whether a doc segment fits an /openapi.json segment (`{id}`, `{id}.gpx`, or a literal). */
function fits(doc: string, spec: string, named: boolean): boolean {
  const pattern = new RegExp(
    `^${spec
      .split(/(\{[^}]+\})/)
      .map((part) => (/^\{.+\}$/.test(part) ? '[^/]+?' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('')}$`,
  );
  // A `*` (any value) fits what a parameter value fits.
  const value = doc.replace(/^\*/, 'x');
  if (!named) return pattern.test(value);
  // A named use's literal segment may be an example value (`/sports/121`); its `{name}` must be /openapi.json's.
  return doc === spec || pattern.test(value) || (/\{/.test(doc) && /\{/.test(spec) && pattern.test(doc));
}

/** A named use's `{name}` segments that /openapi.json names otherwise. */
const renamed = (doc: string, spec: string) =>
  segmentsOf(doc).some((s, i) => /\{/.test(s) && s !== segmentsOf(spec)[i]);

/** What is wrong with each use: an unknown path or method, other parameter names. */
export function pathProblems(doc: OpenApiPaths, uses: DocPathUse[]): string[] {
  const specPaths = Object.keys(doc.paths);
  const problems: string[] = [];
  for (const use of uses) {
    const segments = segmentsOf(use.path);
    const candidates = specPaths.filter((p) => {
      const spec = segmentsOf(p);
      // A rest parameter (`/media/{path}`, Koa's `*path`) takes the segments left.
      const rest = spec.at(-1) === `{${REST_PARAMETER}}` && segments.length >= spec.length;
      const length = rest ? spec.length - 1 : spec.length;
      return (
        (rest || spec.length === segments.length) &&
        spec.slice(0, length).every((s, i) => fits(segments[i] ?? '', s, use.named))
      );
    });
    // A literal segment beats a parameter (`/v2/me` before `/v2/{x}`).
    const exact = candidates.find((p) => segmentsOf(p).every((s, i) => s === segments[i] || /^\{/.test(s)));
    const found = candidates.includes(use.path) ? use.path : (exact ?? candidates[0]);
    const label = `${use.where} ${use.method ?? ''} ${use.path}`.replace(/\s+/g, ' ');
    if (!found) {
      problems.push(`${label}: no such path in /openapi.json`);
      continue;
    }
    if (use.named && renamed(use.path, found)) {
      problems.push(`${label}: /openapi.json names it ${found}`);
      continue;
    }
    const item = doc.paths[found] ?? {};
    const operation = use.method ? item[use.method.toLowerCase()] : (item.get ?? Object.values(item)[0]);
    if (!operation) {
      problems.push(`${label}: /openapi.json has no ${use.method} on ${found}`);
      continue;
    }
    const names = new Set((operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name));
    for (const name of use.query)
      if (!names.has(name)) problems.push(`${label}: query parameter ${name} is not in /openapi.json`);
  }
  return problems;
}
