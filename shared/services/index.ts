import { accountsRegistration } from '../accounts/registration.ts';
import type { ServiceSettings } from '../config.ts';
import { idempotencyRegistration } from '../idempotency/registration.ts';
import {
  type DeletionStep,
  deletionStepsInOrder,
  type PersonalDataSection,
  type ServiceRegistration,
} from '../kernel/registration.ts';
import { partnersRegistration } from '../partners/registration.ts';
import { placesRegistration } from '../places/registration.ts';
import { trackingRegistration } from '../tracking/registration.ts';

/**
 * The one place that knows every service's registration (shared/kernel/registration.ts): the
 * kernel gets what it runs from here (the account deletion's steps, the personal data export's
 * sections, the settings' checks), so accounts and config import no service.
 */
export const SERVICE_REGISTRATIONS: readonly ServiceRegistration[] = [
  accountsRegistration,
  trackingRegistration,
  placesRegistration,
  partnersRegistration,
  idempotencyRegistration,
];

/**
 * The order of the account deletion's steps (docs/accounts-lifecycle.md): revoked first, then the
 * rows children before parents, public shares first (the share pages stop at once), the tracking
 * user last; the deletion then removes the files and the account. Every registered step is here
 * once (checked when this module loads).
 */
export const ACCOUNT_DELETION_ORDER = [
  'revoke',
  'shares',
  'user-shares',
  'exports',
  'jobs',
  'idempotency-keys',
  'activities',
  'activity-tombstones',
  'records',
  'measures',
  'devices',
  'gear-goals-challenges',
  'uploads',
  'places',
  'partners',
  'clients',
  'webhooks',
  'tracking-user',
] as const;

export const ACCOUNT_DELETION_STEPS: readonly DeletionStep[] = deletionStepsInOrder(
  SERVICE_REGISTRATIONS,
  ACCOUNT_DELETION_ORDER,
);

/** The members other services add to the personal data export's `profile.json`, in this order. */
export const PERSONAL_DATA_SECTIONS: readonly PersonalDataSection[] = SERVICE_REGISTRATIONS.flatMap((r) =>
  r.personalData ? [r.personalData] : [],
);

/** The services' checks of their variables. */
export const SERVICE_SETTINGS: ServiceSettings = Object.assign({}, ...SERVICE_REGISTRATIONS.map((r) => r.settings));
