import { XMLParser } from 'fast-xml-parser';
import { ImportError } from './import-error.ts';
import { IMPORT_LIMITS } from './limits.ts';

/**
 * Reading GPX and TCX safely: bytes to text (BOM, declared encoding), refusal of DTDs before any
 * parsing (no entity expansion, no external entity can be reached), a parse that strips namespace
 * prefixes and keeps every value a string, and small accessors over the parsed tree.
 */

/** A parsed element: attributes as `@_name`, text as `#text` when it also has attributes or children. */
export type XmlNode = { [key: string]: unknown };

const UTF16 = (b: Uint8Array) =>
  b[0] === 0xff && b[1] === 0xfe ? 'utf-16le' : b[0] === 0xfe && b[1] === 0xff ? 'utf-16be' : undefined;

/** The document's text, from its BOM or its `<?xml encoding?>` (UTF-8 when neither says). */
export function decodeXml(bytes: Uint8Array): string {
  if (bytes.length > IMPORT_LIMITS.maxXmlBytes) {
    throw new ImportError(
      'too-large',
      `the file is ${bytes.length} bytes; GPX and TCX files are accepted up to ${IMPORT_LIMITS.maxXmlBytes} bytes`,
    );
  }
  let label = UTF16(bytes);
  if (!label) {
    const head = new TextDecoder('latin1').decode(bytes.subarray(0, 200));
    label = /^(?:\uFEFF|\u00EF\u00BB\u00BF)?\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']/.exec(head)?.[1];
  }
  let decoder: InstanceType<typeof TextDecoder>;
  try {
    decoder = new TextDecoder(label ?? 'utf-8');
  } catch {
    throw new ImportError('malformed', `the XML declares the encoding "${label}", which is not supported`);
  }
  // TextDecoder drops a BOM matching its encoding; bytes it cannot decode become U+FFFD.
  return decoder.decode(bytes);
}

/**
 * GPX and TCX never need a DTD; refusing one outright closes entity expansion ("billion laughs")
 * and external entities (XXE) before the parser sees the document.
 */
export function assertNoDtd(text: string): void {
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) {
    throw new ImportError(
      'unsafe',
      'the document has a DOCTYPE or ENTITY declaration; GPX and TCX files need none, and they are refused so that no entity is ever expanded',
    );
  }
}

/**
 * The local name of the root element, or undefined when the text does not start like XML. A
 * scanner, not a regular expression: a file of crafted `<?`, `<!--` runs must not backtrack.
 * A DOCTYPE is skipped here so that the importer, not the sniffer, refuses it with its reason.
 */
export function rootElementName(text: string): string | undefined {
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const end = Math.min(text.length, 65536);
  while (i < end) {
    while (i < end && /\s/.test(text[i] as string)) i++;
    let next: number;
    if (text.startsWith('<?', i)) next = after(text, '?>', i);
    else if (text.startsWith('<!--', i)) next = after(text, '-->', i);
    else if (text.startsWith('<!DOCTYPE', i)) {
      const bracket = text.indexOf('[', i);
      const close = text.indexOf('>', i);
      const subsetEnd = bracket >= 0 && bracket < close ? after(text, ']', bracket) : -2;
      next = subsetEnd === -2 ? after(text, '>', i) : subsetEnd < 0 ? -1 : after(text, '>', subsetEnd);
    } else break;
    if (next <= i) return undefined;
    i = next;
  }
  const m = /^<(?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)/.exec(text.slice(i, i + 256));
  return m?.[1];
}

const after = (text: string, token: string, from: number) => {
  const at = text.indexOf(token, from);
  return at < 0 ? -1 : at + token.length;
};

/** True when the text, less trailing whitespace and comments, ends with the root's closing tag. */
function endsWithRootClose(text: string, root: string): boolean {
  let end = text.length;
  for (;;) {
    while (end > 0 && /\s/.test(text[end - 1] as string)) end--;
    if (!text.startsWith('-->', end - 3)) break;
    const open = text.lastIndexOf('<!--', end - 3);
    if (open < 0) return false;
    end = open;
  }
  const tail = text.slice(Math.max(0, end - 300), end);
  return new RegExp(`</(?:[A-Za-z_][\\w.-]*:)?${root}\\s*>$`).test(tail);
}

/**
 * The parsed document. A document that stops before its root element closes (an upload cut
 * short) is refused rather than imported in part: the parser alone would accept it.
 */
export function parseXml(text: string, root: string, arrayTags: ReadonlySet<string>): XmlNode {
  assertNoDtd(text);
  if (!endsWithRootClose(text, root)) {
    throw new ImportError(
      'malformed',
      `the document ends before its <${root}> element is closed: the file is cut short`,
    );
  }
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '@_',
    removeNSPrefix: true,
    parseTagValue: false,
    parseAttributeValue: false,
    trimValues: true,
    ignoreDeclaration: true,
    ignorePiTags: true,
    // No DTD reaches the parser (assertNoDtd), so only the five XML entities and character
    // references are decoded; htmlEntities is what turns on numeric references (&#233;).
    processEntities: true,
    htmlEntities: true,
    maxNestedTags: 64,
    isArray: (name) => arrayTags.has(name),
  });
  let doc: XmlNode;
  try {
    doc = parser.parse(text) as XmlNode;
  } catch (err) {
    throw new ImportError('malformed', `the XML cannot be read: ${(err as Error).message}`);
  }
  const node = doc[root];
  if (node === undefined) throw new ImportError('malformed', `the root element is not <${root}>`);
  return asNode(node);
}

/** An element as a node (a text-only or empty element parses to a string). */
export function asNode(value: unknown): XmlNode {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as XmlNode;
  return { '#text': typeof value === 'string' ? value : '' };
}

/** The child elements named `name` (declared in arrayTags or not). */
export function children(node: XmlNode | undefined, name: string): XmlNode[] {
  const value = node?.[name];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).map(asNode);
}

/** The first child element named `name`. */
export const child = (node: XmlNode | undefined, name: string): XmlNode | undefined => children(node, name)[0];

/** An element's text (trimmed), or undefined when absent or empty. */
export function textOf(node: XmlNode | undefined): string | undefined {
  if (!node) return undefined;
  const text = node['#text'];
  return typeof text === 'string' && text !== '' ? text : undefined;
}

/** The text of the child `name`. */
export const childText = (node: XmlNode | undefined, name: string) => textOf(child(node, name));

/** An attribute's value. */
export function attr(node: XmlNode | undefined, name: string): string | undefined {
  const value = node?.[`@_${name}`];
  return typeof value === 'string' ? value : undefined;
}

const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** A decimal number (XML Schema's lexical forms); NaN for anything else, hex and words included. */
export function decimal(text: string | undefined): number {
  return text !== undefined && DECIMAL.test(text) ? Number(text) : Number.NaN;
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * An xsd:dateTime in epoch milliseconds, NaN when it is not one. Without an offset the time is
 * taken as UTC, which GPX mandates and TCX writers mean.
 */
export function dateTime(text: string | undefined): number {
  const m = text === undefined ? null : DATE_TIME.exec(text);
  if (!m) return Number.NaN;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const ms =
    Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)) +
    (frac ? Math.round(Number(`0${frac}`) * 1000) : 0);
  if (Number(mo) > 12 || Number(d) > 31 || Number(h) > 24 || Number(mi) > 59 || Number(s) > 60) return Number.NaN;
  if (!zone || zone === 'Z') return ms;
  const sign = zone[0] === '-' ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  return ms - sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60_000;
}
