/** Path prefix of the tracking service: its IRIs are paths below it. */
export const TRACKING_PREFIX = '/v2';

/** Every collection the tracking service names by IRI, with the `@type` of its members. */
export const IRI_TYPES = {
  users: 'User',
  sports: 'Sport',
  datatypes: 'Datatype',
  universes: 'Universe',
  device_models: 'DeviceModel',
  firmwares: 'Firmware',
  connectors: 'Connector',
  user_devices: 'UserDevice',
  activities: 'Activity',
  user_measures: 'UserMeasure',
  user_records: 'UserRecord',
  share_activities: 'ShareActivity',
  share_users: 'ShareUser',
  user_equipments: 'UserEquipment',
  user_measure_goals: 'UserMeasureGoal',
  user_challenges: 'UserChallenge',
  jobs: 'Job',
} as const;
export type IriCollection = keyof typeof IRI_TYPES;

/** `/v2/<collection>/<id>`. */
export function iri(collection: IriCollection, id: string | number): string {
  return `${TRACKING_PREFIX}/${collection}/${encodeURIComponent(String(id))}`;
}

/** The IRI of a nullable reference (null stays null). */
export function iriOrNull(collection: IriCollection, id: string | number | null): string | null {
  return id === null ? null : iri(collection, id);
}

/**
 * The id an IRI names in `collection`, or undefined when it is not such an IRI. Accepts the path
 * form (`/v2/sports/121`) and an absolute URL whose path is one (`https://host/v2/sports/121`).
 */
export function parseIri(value: string, collection: IriCollection): string | undefined {
  let path = value;
  if (/^https?:\/\//i.test(value)) {
    try {
      path = new URL(value).pathname;
    } catch {
      return undefined;
    }
  }
  const prefix = `${TRACKING_PREFIX}/${collection}/`;
  if (!path.startsWith(prefix)) return undefined;
  const raw = path.slice(prefix.length);
  if (raw === '' || raw.includes('/')) return undefined;
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/** The integer id of a referential IRI (`/v2/sports/121` → 121), or undefined. */
export function parseIntegerIri(value: string, collection: IriCollection): number | undefined {
  const id = parseIri(value, collection);
  if (id === undefined || !/^[1-9]\d{0,9}$/.test(id)) return undefined;
  const n = Number(id);
  return n <= 2_147_483_647 ? n : undefined;
}
