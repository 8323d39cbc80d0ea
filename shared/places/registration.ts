import type { ServiceRegistration } from '../kernel/registration.ts';
import { placesStep } from './account-deletion-steps.ts';

/** The places service's registration (shared/kernel/registration.ts). */
export const placesRegistration: ServiceRegistration = { name: 'places', deletionSteps: [placesStep] };
