import type { ServiceRegistration } from '../kernel/registration.ts';
import { idempotencyKeysStep } from './account-deletion-step.ts';

/** The idempotency keys' registration (shared/kernel/registration.ts): they hold stored answers of the user's. */
export const idempotencyRegistration: ServiceRegistration = {
  name: 'idempotency',
  deletionSteps: [idempotencyKeysStep],
};
