import { readFileSync } from 'node:fs';

/** The Prometheus rules file of the repository. */
export const ALERTS_FILE = new URL('../../ops/prometheus/alerts.yml', import.meta.url);

/**
 * The alerts of ops/prometheus/alerts.yml with their expressions, read without a YAML library:
 * the file keeps to `- alert:` items whose `expr:` is one line or a `>-` block.
 */
export function readAlertRules(text = readFileSync(ALERTS_FILE, 'utf8')): { alert: string; expr: string }[] {
  const rules: { alert: string; expr: string }[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const alert = /^\s*- alert:\s*(\S+)\s*$/.exec(lines[i] ?? '');
    if (alert) rules.push({ alert: alert[1] as string, expr: '' });
    const expr = /^(\s*)expr:\s*(.*)$/.exec(lines[i] ?? '');
    if (!expr) continue;
    const rule = rules.at(-1);
    if (!rule) throw new Error(`expr outside an alert, line ${i + 1}`);
    if (expr[2] === '>-' || expr[2] === '|') {
      const indent = (expr[1] ?? '').length;
      const block: string[] = [];
      for (let next = lines[i + 1]; next !== undefined; next = lines[i + 1]) {
        if (next.trim() !== '' && next.length - next.trimStart().length <= indent) break;
        block.push(next.trim());
        i++;
      }
      rule.expr = block.join(' ').trim();
    } else rule.expr = expr[2] ?? '';
  }
  return rules;
}

const PROMQL_WORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
]);

/** The metric names an expression reads: identifiers that are not functions, keywords, labels or strings. */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, '');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const word = m[0];
    const after = stripped.slice((m.index ?? 0) + word.length).trimStart();
    if (after.startsWith('(') || PROMQL_WORDS.has(word)) continue;
    names.add(word);
  }
  return [...names];
}
