import type { ServiceRegistration } from '../kernel/registration.ts';
import {
  activitiesStep,
  activityTombstonesStep,
  devicesStep,
  exportsStep,
  jobsStep,
  measuresStep,
  progressStep,
  recordsStep,
  sharesStep,
  trackingUserStep,
  uploadsStep,
  userSharesStep,
  webhooksStep,
} from './account-deletion-steps.ts';
import { recordsFamiliesFileVariable } from './records/settings.ts';

/**
 * The tracking service's registration (shared/kernel/registration.ts). No personal data section:
 * the tracking service writes the personal data archive itself (exports/personal-data.ts).
 */
export const trackingRegistration: ServiceRegistration = {
  name: 'tracking',
  deletionSteps: [
    sharesStep,
    userSharesStep,
    exportsStep,
    jobsStep,
    activitiesStep,
    activityTombstonesStep,
    recordsStep,
    measuresStep,
    devicesStep,
    progressStep,
    uploadsStep,
    webhooksStep,
    trackingUserStep,
  ],
  settings: { RECORDS_FAMILIES_FILE: recordsFamiliesFileVariable.optional() },
};
