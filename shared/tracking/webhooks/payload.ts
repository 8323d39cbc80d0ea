import { formatDateTime } from '../dates.ts';

/**
 * The body of a delivery (docs/webhooks.md, "Payload"), the same for every hook and every try of
 * an event: its id, type and time, the resource's IRI and the resource as the API served it.
 */
export function deliveryBody(event: {
  id: string;
  type: string;
  occurred_at: Date;
  resource: string;
  data: unknown;
}): string {
  return JSON.stringify({
    id: event.id,
    type: event.type,
    timestamp: formatDateTime(event.occurred_at),
    resource: event.resource,
    data: event.data,
  });
}
