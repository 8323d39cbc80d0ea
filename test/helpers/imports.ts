import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The repository's root, with a trailing separator. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The `.ts` files under `dir` (relative to the repository), sorted. */
export function tsFilesUnder(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.posix.join(dir, f.split(path.sep).join('/')))
    .sort();
}

export interface ImportOf {
  /** As written. */
  specifier: string;
  /** Relative to the repository for a relative specifier; undefined for a package or a builtin. */
  file?: string;
}

/**
 * Every module a file imports, with TypeScript's parser: `import` (type-only too), `export … from`
 * and `import()`.
 */
export function importsOf(file: string): ImportOf[] {
  const info = ts.preProcessFile(readFileSync(path.join(ROOT, file), 'utf8'), true, true);
  return info.importedFiles.map(({ fileName }) =>
    fileName.startsWith('.')
      ? { specifier: fileName, file: path.posix.normalize(path.posix.join(path.posix.dirname(file), fileName)) }
      : { specifier: fileName },
  );
}
