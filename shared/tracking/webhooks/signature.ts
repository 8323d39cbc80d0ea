import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): a delivery's `webhook-signature`
 * is `v1,` + base64 of HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the
 * bytes of the hook's secret (`whsec_` + base64). Signed with node:crypto, which is native: the
 * `standardwebhooks` package (its JavaScript HMAC) verifies these in the tests.
 */

const PREFIX = 'whsec_';

/** A new hook secret: `whsec_` + base64 of 32 random bytes (256 bits). */
export function newWebhookSecret(): string {
  return `${PREFIX}${randomBytes(32).toString('base64')}`;
}

/** The `v1,<base64>` signature of one secret. */
export function signWebhook(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
  const mac = createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three Standard Webhooks headers; every secret given signs (a rotation's old and new secret). */
export function webhookHeaders(
  secrets: readonly string[],
  messageId: string,
  at: Date,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => signWebhook(s, messageId, timestamp, body)).join(' '),
  };
}
