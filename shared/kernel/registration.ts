import type { Transaction } from 'kysely';
import type { ServiceSettings } from '../config.ts';
import type { Db } from '../db/database.ts';
import type { DeletedCounts } from '../db/schema/account-deletions.ts';
import type { Database } from '../db/schema/index.ts';

/**
 * What a service gives the kernel (docs/CONTRIBUTING-internals.md, "A service's registration"):
 * how to delete an account's data, what to add to the personal data export, the checks of its
 * settings. The kernel (the account deletion, the export's profile, the configuration) runs these
 * without importing any service; shared/services/index.ts lists the registrations.
 */
export interface ServiceRegistration {
  name: string;
  /** Its steps of the account deletion, by name; shared/services/index.ts puts all steps in order. */
  deletionSteps: readonly DeletionStep[];
  /** Its members of the personal data export's `profile.json`. */
  personalData?: PersonalDataSection;
  /** Checks of the variables of shared/config.ts it reads (run when the configuration loads). */
  settings?: ServiceSettings;
}

export type Trx = Transaction<Database>;

/** Whose data a deletion removes. */
export interface DeletionTarget {
  accountId: string;
  /** The tracking user id (the account's `ldid`). */
  userId: string;
}

/** One transaction's work: what it deleted (per counter of `account_deletions.deleted`) and the files its rows named. */
export interface DeletionBatch {
  counts?: DeletedCounts;
  files?: string[];
}

/** What the account deletion gives a step: its transactions, each renewing the run's lease. */
export interface DeletionStepRun {
  readonly db: Db;
  readonly target: DeletionTarget;
  /** Rows per transaction. */
  readonly batchSize: number;
  /**
   * One transaction: `work` deletes, the run records the files it names and adds its counts in
   * the same commit. Returns how many rows it counted.
   */
  transaction(work: (trx: Trx) => Promise<DeletionBatch>): Promise<number>;
  /** Repeats `work` (one batch of at most `size` rows, counted under `key`) until a batch comes short. */
  batches(
    key: string,
    work: (trx: Trx, limit: number) => Promise<{ count: number; files?: string[] }>,
    size?: number,
  ): Promise<void>;
}

/**
 * A step of the account deletion. It deletes only what is left (a resumed run does it again).
 * `remains` says whether a row it deletes came back meanwhile: the account is then kept for the
 * next run.
 */
export interface DeletionStep {
  /** Recorded in `account_deletions.step`. */
  name: string;
  run(run: DeletionStepRun): Promise<void>;
  remains?(trx: Trx, target: DeletionTarget): Promise<boolean>;
}

/** How the export writes values whose form is the archive's (dates as its API answers them). */
export interface PersonalDataFormat {
  dateTime(date: Date): string;
}

/** A service's members of `profile.json` (JSON values, in the order they are written). */
export type PersonalDataSection = (
  db: Db,
  accountId: string,
  format: PersonalDataFormat,
) => Promise<Record<string, unknown>>;

/**
 * The steps of `registrations` in the order `order` names them: every step of a registration
 * once, and only those (a step left out would leave data behind).
 */
export function deletionStepsInOrder(
  registrations: readonly ServiceRegistration[],
  order: readonly string[],
): DeletionStep[] {
  const byName = new Map<string, DeletionStep>();
  for (const r of registrations)
    for (const step of r.deletionSteps) {
      if (byName.has(step.name)) throw new Error(`deletion step ${step.name} registered twice`);
      byName.set(step.name, step);
    }
  const steps = order.map((name) => {
    const step = byName.get(name);
    if (!step) throw new Error(`deletion step ${name} is registered by no service`);
    byName.delete(name);
    return step;
  });
  if (byName.size > 0) throw new Error(`deletion steps left out of the order: ${[...byName.keys()].join(', ')}`);
  return steps;
}
