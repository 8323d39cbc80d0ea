import type { QueueName } from '../../shared/config.ts';
import type { Processor } from '../processor.ts';
import { thumbnailsProcessor } from './thumbnails.ts';

/**
 * The processor of each queue this build implements. A queue of the plan (config QUEUE_NAMES)
 * without an entry here is not run; naming it in WORKER_QUEUES explicitly is a start error.
 */
export const PROCESSORS: Partial<Record<QueueName, Processor>> = {
  thumbnails: thumbnailsProcessor,
};
