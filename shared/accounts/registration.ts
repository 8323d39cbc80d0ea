import type { ServiceRegistration } from '../kernel/registration.ts';
import { clientsStep, revokeStep } from './account-deletion-steps.ts';
import { accountPersonalData } from './personal-data.ts';

/** The accounts service's registration (shared/kernel/registration.ts). */
export const accountsRegistration: ServiceRegistration = {
  name: 'accounts',
  deletionSteps: [revokeStep, clientsStep],
  personalData: accountPersonalData,
};
