import type { Processors } from '../processor.ts';
import { thumbnailsProcessor } from './thumbnails.ts';

/**
 * The processor of each queue that has jobs (shared/queue/jobs.ts). The type requires one per
 * queue and a handler per job name; the worker checks it again at start (see checkProcessors).
 */
export const PROCESSORS: Processors = {
  thumbnails: thumbnailsProcessor,
};
