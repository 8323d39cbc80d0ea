import test from 'ava';
import { Webhook } from 'standardwebhooks';
import { hookRetryDelayMs, retryDelayMs } from '../shared/tracking/webhooks/retry.ts';
import { MAX_ANSWER_BYTES, sendWebhook } from '../shared/tracking/webhooks/send.ts';
import { newWebhookSecret, signWebhook, webhookHeaders } from '../shared/tracking/webhooks/signature.ts';
import { blockedAddress, urlProblem } from '../shared/tracking/webhooks/target.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';

// What a delivery may reach and how it behaves on the wire (shared/tracking/webhooks/send.ts,
// target.ts), against a loopback receiver; and the signing and retry rules.

const receiver = await startReceiver();
test.after.always(() => receiver.close());

const open = { WEBHOOKS_ALLOW_HTTP: true, WEBHOOKS_ALLOW_PRIVATE: true };
const body = JSON.stringify({ id: 'evt_1', type: 'activity_create' });
const headers = () => webhookHeaders([newWebhookSecret()], 'msg_test', new Date(), body);
const send = (url: string, rules = open, timeoutMs = 30_000) => sendWebhook(url, headers(), body, { rules, timeoutMs });

test('internal addresses are named, IPv4-mapped IPv6 as the IPv4 address it maps; public unicast ones pass', (t) => {
  const cases: Record<string, RegExp> = {
    '127.0.0.1': /loopback/,
    '10.1.2.3': /private/,
    '172.16.0.1': /private/,
    '192.168.1.1': /private/,
    '169.254.169.254': /link-local/,
    '100.64.0.1': /carrier-grade NAT/,
    '0.0.0.0': /unspecified/,
    '224.0.0.1': /multicast/,
    '255.255.255.255': /broadcast/,
    '::1': /loopback/,
    '::': /unspecified/,
    'fe80::1': /link-local/,
    'fd00:ec2::254': /unique local/,
    'ff02::1': /multicast/,
    '::ffff:127.0.0.1': /loopback/,
    '::ffff:a9fe:a9fe': /link-local/,
    // Every IPv6 form that carries an IPv4 address is judged by it (was: ::7f00:1 accepted).
    '::7f00:1': /IPv6 form of a loopback/,
    '::127.0.0.1': /IPv6 form of a loopback/,
    '::a9fe:a9fe': /IPv6 form of a link-local/,
    '::ffff:0:a00:1': /IPv6 form of a private/,
    '64:ff9b::a00:1': /IPv6 form of a private/,
    '64:ff9b::7f00:1': /IPv6 form of a loopback/,
    '64:ff9b:1::a00:1': /IPv6 form of a private/,
    '2002:a00:1::': /IPv6 form of a private/,
    '2002:7f00:1::1': /IPv6 form of a loopback/,
    // Teredo: the server (bits 32-64) and the client (the last 32 bits, inverted) both count.
    '2001:0:a00:1:0:0:f7f7:f7f7': /IPv6 form of a private/,
    '2001:0:808:808:0:0:80ff:fffe': /IPv6 form of a loopback/,
  };
  for (const [address, words] of Object.entries(cases)) t.regex(blockedAddress(address) ?? '', words, address);
  const publicOnes = ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '::808:808'];
  const carriers = ['64:ff9b::808:808', '2002:808:808::1', '2001:0:808:808:0:0:f7f7:f7f7'];
  for (const address of [...publicOnes, ...carriers]) t.is(blockedAddress(address), undefined, address);
});

test('a hook URL must be absolute http(s), https unless allowed, without credentials, not an internal IP literal', (t) => {
  const strict = { WEBHOOKS_ALLOW_HTTP: false, WEBHOOKS_ALLOW_PRIVATE: false };
  t.is(urlProblem('https://example.com/hook', strict), undefined);
  t.regex(urlProblem('http://example.com/hook', strict) ?? '', /WEBHOOKS_ALLOW_HTTP/);
  t.is(urlProblem('http://example.com/hook', { ...strict, WEBHOOKS_ALLOW_HTTP: true }), undefined);
  t.regex(urlProblem('ws://example.com', strict) ?? '', /http\(s\)/);
  t.regex(urlProblem('/relative', strict) ?? '', /absolute/);
  t.regex(urlProblem('https://u:p@example.com', strict) ?? '', /credentials/);
  // The URL parser's forms of 127.0.0.1 are all caught.
  for (const host of ['127.0.0.1', '0x7f.1', '2130706433', '[::1]', '[::ffff:127.0.0.1]', '[::7f00:1]'])
    t.regex(urlProblem(`https://${host}/`, strict) ?? '', /loopback/, host);
  t.is(urlProblem('https://127.0.0.1/', open), undefined);
  t.regex(urlProblem(`https://example.com/${'a'.repeat(2048)}`, strict) ?? '', /at most/);
});

test('without WEBHOOKS_ALLOW_PRIVATE a delivery to loopback is refused, by address and by a name resolving to it', async (t) => {
  const port = new URL(receiver.url).port;
  const rules = { WEBHOOKS_ALLOW_HTTP: true, WEBHOOKS_ALLOW_PRIVATE: false };
  const byAddress = await send(`${receiver.url}/private`, rules);
  t.false(byAddress.ok);
  t.is(byAddress.statusCode, null);
  t.regex(byAddress.error ?? '', /^refused: 127\.0\.0\.1 is a loopback address/);
  // A name: one generic reason, naming neither the address nor whether it resolved at all (was:
  // "localhost resolves to 127.0.0.1", an oracle of the server's internal names).
  const byName = await send(`http://localhost:${port}/private`, rules);
  t.is(byName.error, 'refused: the host does not resolve to a public address');
  const unknown = await send('http://no-such-host.invalid/private', rules);
  t.is(unknown.error, byName.error);
  t.deepEqual(receiver.at('/private'), [], 'nothing reached the receiver');
});

test('without WEBHOOKS_ALLOW_HTTP a delivery over http is refused', async (t) => {
  const result = await send(`${receiver.url}/plain`, { WEBHOOKS_ALLOW_HTTP: false, WEBHOOKS_ALLOW_PRIVATE: true });
  t.regex(result.error ?? '', /^refused: the URL must be an https URL/);
  t.deepEqual(receiver.at('/plain'), []);
});

test('a name is resolved once and connected to as checked, keeping the name in the Host header', async (t) => {
  const port = new URL(receiver.url).port;
  const result = await send(`http://localhost:${port}/named`);
  t.true(result.ok, result.error ?? '');
  t.is(receiver.at('/named')[0]?.headers.host, `localhost:${port}`);
});

test('a redirect is not followed: the attempt fails naming where it pointed', async (t) => {
  receiver.on('/moved', (_req, res) => res.writeHead(307, { location: '/moved-here' }).end());
  const result = await send(`${receiver.url}/moved`);
  t.false(result.ok);
  t.is(result.statusCode, 307);
  t.is(result.error, 'HTTP 307: redirect to /moved-here not followed');
  t.deepEqual(receiver.at('/moved-here'), []);
});

test(`at most ${MAX_ANSWER_BYTES / 1024} KB of an answer are read: an endless one ends the attempt, a success`, async (t) => {
  let closed = false;
  receiver.on('/endless', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const chunk = Buffer.alloc(16 * 1024, 'x');
    const pump = () => {
      while (!res.destroyed && res.write(chunk));
    };
    res.on('drain', pump);
    res.on('close', () => {
      closed = true;
    });
    pump();
  });
  // Read to its end, the answer would last until the 30 s timeout and fail the attempt.
  const result = await send(`${receiver.url}/endless`);
  t.true(result.ok, result.error ?? '');
  t.is(result.statusCode, 200);
  t.true(await receiver.until(() => closed), 'the connection was closed by the sender');
});

test('an attempt without an answer ends after the timeout; a reset connection is named', async (t) => {
  receiver.on('/silent', () => {});
  const slow = await send(`${receiver.url}/silent`, open, 200);
  t.deepEqual(
    { ok: slow.ok, statusCode: slow.statusCode, error: slow.error },
    {
      ok: false,
      statusCode: null,
      error: 'no answer within 200 ms',
    },
  );
  receiver.on('/reset', (req) => req.socket.destroy());
  const reset = await send(`${receiver.url}/reset`);
  t.false(reset.ok);
  t.regex(reset.error ?? '', /reset|hang up|closed/);
  t.regex((await send('http://127.0.0.1:1/closed')).error ?? '', /connection refused/);
});

test('signatures are Standard Webhooks ones: standardwebhooks signs the same and verifies ours', (t) => {
  const secret = newWebhookSecret();
  const at = new Date();
  const seconds = Math.floor(at.getTime() / 1000);
  t.is(signWebhook(secret, 'msg_1', seconds, body), new Webhook(secret).sign('msg_1', at, body));
  const signed = webhookHeaders([secret], 'msg_1', at, body);
  t.deepEqual(new Webhook(secret).verify(body, signed), JSON.parse(body));
  t.throws(() => new Webhook(newWebhookSecret()).verify(body, signed), { message: 'No matching signature found' });
  t.throws(() => new Webhook(secret).verify(`${body} `, signed));
});

test('retries back off exponentially with jitter: the first within a minute, about a day in all', (t) => {
  const base = 20_000;
  const middle = () => 0.5;
  t.true(retryDelayMs(1, base, () => 1) < 60_000);
  t.is(
    retryDelayMs(1, base, () => 0),
    15_000,
  );
  // Eight waits: the ninth try comes about a day after the first.
  const waits = Array.from({ length: 8 }, (_, i) => retryDelayMs(i + 1, base, middle));
  const total = waits.reduce((a, b) => a + b, 0);
  t.true(total > 20 * 3600_000 && total < 30 * 3600_000, String(total));
  t.is(Math.max(...waits), 8 * 3600_000);
  // A failing hook waits three times as long as it has been failing: the same growth, in time.
  t.is(hookRetryDelayMs(0, base, middle), base);
  t.is(hookRetryDelayMs(60_000, base, middle), 180_000);
  t.is(hookRetryDelayMs(100 * 3600_000, base, middle), 8 * 3600_000);
});
