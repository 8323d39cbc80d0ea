/**
 * Statements written as text for pg, as the hot reads send them: numbered parameters, and a
 * prepared-statement name per distinct text. Such a text depends only on which filters are
 * present, never on their values, so pg prepares it once per connection and PostgreSQL skips
 * its parse and analysis on every call; nothing is built or compiled per request.
 */

/** The values of a statement being written: `add` gives the placeholder of the next one. */
export class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

export interface Statement {
  /** Undefined: the statement runs unnamed (past the names' bound). */
  name?: string;
  text: string;
  values: unknown[];
}

/**
 * A namer of statements: `prefix_1`, `prefix_2`... one per distinct text, at most `max` per
 * process (a filter combination past that runs unnamed; pg refuses a name reused for another text).
 */
export function statementNames(prefix: string, max = 100): (text: string) => string | undefined {
  const names = new Map<string, string>();
  return (text) => {
    let name = names.get(text);
    if (name === undefined && names.size < max) {
      name = `${prefix}_${names.size + 1}`;
      names.set(text, name);
    }
    return name;
  };
}

/** `text` and `values` as a Statement, named by `names`. */
export function statement(names: (text: string) => string | undefined, text: string, values: unknown[]): Statement {
  const name = names(text);
  return name === undefined ? { text, values } : { name, text, values };
}
