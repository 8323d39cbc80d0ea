/**
 * Which way a record goes. `highest`: the greatest value is the best (distance, calories, maximum
 * speed); `lowest`: the smallest is the best (the time over a distance).
 */
export type RecordDirection = 'highest' | 'lowest';

/**
 * The meaning of a datatype's `recordWay` (datatype referential): 1, the summary value of the
 * datatype is a record and the highest is the best; 0, it is not a record (current values, minima,
 * averages such as heart rate, modes, flags). The referential and every published source hold only
 * these two values; no "lowest is best" code exists there, so any other value is treated as 0 rather
 * than guessed (docs/tracking-records.md).
 */
export function recordDirection(recordWay: number | undefined): RecordDirection | null {
  return recordWay === 1 ? 'highest' : null;
}

/** A number that is larger for a better value whatever the direction: one index order finds the best. */
export function recordScore(value: number, direction: RecordDirection): number {
  return direction === 'highest' ? value : -value;
}
