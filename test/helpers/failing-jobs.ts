import { UnrecoverableError } from 'bullmq';

/** Shared by the test/jobs-*.test.ts files: thumbnail jobs that fail for real (not a test file itself). */

/**
 * A thumbnails processor whose handler throws for the activities in `broken` (an
 * UnrecoverableError: failed at once, no backoff to wait for) and waits for the ones held.
 */
export class FailingThumbnails {
  readonly broken = new Set<number>();
  readonly #held = new Map<number, Promise<void>>();

  /** The job of this activity waits in its handler until the returned function is called. */
  hold(activityId: number): () => void {
    let release = () => {};
    this.#held.set(
      activityId,
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    return () => release();
  }

  readonly processors = {
    thumbnails: {
      'activity-thumbnail': async (job: { data: { activityId: number } }) => {
        const { activityId } = job.data;
        if (this.broken.has(activityId)) throw new UnrecoverableError('the original is missing');
        await this.#held.get(activityId);
        return null;
      },
      'activity-track-thumbnail': async () => null,
      'thumbnails-rebuild-job': async () => null,
    },
  };
}

export async function waitFor(check: () => Promise<boolean>, ms = 120_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!(await check()) && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
  return check();
}
