/**
 * The keyset cursor of the lists newest first (the public list, the feed): the last item's start
 * and id, opaque to clients (base64url of `<epoch ms>.<id>`). A cursor is a position, not a
 * snapshot: items added before it since are not shown again. Milliseconds are exact: every
 * writer stores starts from JavaScript dates.
 */

export interface Position {
  startdate: Date;
  id: string;
}

export function encodeCursor(p: Position): string {
  return Buffer.from(`${p.startdate.getTime()}.${p.id}`).toString('base64url');
}

/** The position a cursor names; undefined when it is not one of ours. */
export function decodeCursor(cursor: string): Position | undefined {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) return undefined;
  const match = /^(-?\d{1,16})\.([A-Za-z0-9_-]{1,64})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!match) return undefined;
  const startdate = new Date(Number(match[1]));
  return Number.isNaN(startdate.getTime()) ? undefined : { startdate, id: match[2] as string };
}
