import type { ServiceRegistration } from '../kernel/registration.ts';
import { partnersStep } from './account-deletion-steps.ts';

/** The partners service's registration (shared/kernel/registration.ts). */
export const partnersRegistration: ServiceRegistration = { name: 'partners', deletionSteps: [partnersStep] };
