import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where a webhook may be sent (docs/webhooks.md, "Safety"): https (http with
 * WEBHOOKS_ALLOW_HTTP), and only to public unicast addresses (any with WEBHOOKS_ALLOW_PRIVATE).
 * A name is resolved once, at delivery, every address it resolves to is checked, and the
 * connection goes to the checked address (send.ts): a name that changes its answer between a
 * check and the connection (DNS rebinding) reaches nothing it was not checked for.
 */

export interface TargetRules {
  WEBHOOKS_ALLOW_HTTP: boolean;
  WEBHOOKS_ALLOW_PRIVATE: boolean;
}

/** Longest URL a hook may have. */
export const MAX_URL_LENGTH = 2048;

/** What ipaddr.js calls the ranges, in words for the owner reading why a delivery was refused. */
const RANGE_WORDS: Record<string, string> = {
  unspecified: 'an unspecified address',
  broadcast: 'a broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address (cloud metadata services live there)',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT address',
  private: 'a private address',
  uniqueLocal: 'a unique local (private) IPv6 address',
  reserved: 'a reserved address',
};

/**
 * Why an IP address may not be a webhook target, or undefined for a public unicast one. An IPv6
 * address that carries an IPv4 address (IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64,
 * 6to4, Teredo) is judged by every IPv4 address it carries: a route to it may end there.
 */
export function blockedAddress(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return 'not an IP address';
  }
  if (parsed.kind() === 'ipv6') {
    const carried = embeddedIPv4(parsed as ipaddr.IPv6);
    if (carried) {
      for (const v4 of carried) {
        const blocked = blockedRange(v4);
        if (blocked) return `an IPv6 form of ${blocked}`;
      }
      return undefined;
    }
  }
  return blockedRange(parsed);
}

function blockedRange(parsed: ipaddr.IPv4 | ipaddr.IPv6): string | undefined {
  const range = parsed.range();
  if (range === 'unicast') return undefined;
  return RANGE_WORDS[range] ?? `in the special range "${range}"`;
}

const v4Of = (hi: number, lo: number) => ipaddr.fromByteArray([hi >> 8, hi & 255, lo >> 8, lo & 255]) as ipaddr.IPv4;

/**
 * The IPv4 addresses an IPv6 address carries, or undefined when it is no such form: the last 32
 * bits of ::a.b.c.d (IPv4-compatible, deprecated), ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d
 * (translated), 64:ff9b::/96 and 64:ff9b:1::/48 (NAT64); bits 16-48 of 2002::/16 (6to4); the
 * server (bits 32-64) and the client (the last 32 bits, inverted) of 2001::/32 (Teredo).
 */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4[] | undefined {
  const p = ip.parts;
  const w = (i: number) => p[i] ?? 0;
  const last = () => v4Of(w(6), w(7));
  const zeros = (from: number, to: number) => p.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && (w(5) === 0 || w(5) === 0xffff)) {
    // :: and ::1 are the unspecified and loopback addresses themselves.
    if (w(5) === 0 && w(6) === 0 && w(7) <= 1) return undefined;
    return [last()];
  }
  if (zeros(0, 4) && w(4) === 0xffff && w(5) === 0) return [last()];
  if (w(0) === 0x64 && w(1) === 0xff9b && (zeros(2, 6) || w(2) === 1)) return [last()];
  if (w(0) === 0x2002) return [v4Of(w(1), w(2))];
  if (w(0) === 0x2001 && w(1) === 0) return [v4Of(w(2), w(3)), v4Of(w(6) ^ 0xffff, w(7) ^ 0xffff)];
  return undefined;
}

/** A URL's host without the brackets of an IPv6 literal. */
const bareHost = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * Why a hook's URL is refused when it is written (a 422), or undefined: not an absolute http(s)
 * URL, http without WEBHOOKS_ALLOW_HTTP, credentials in it, or an IP literal of a refused range.
 * Names are checked when a delivery resolves them.
 */
export function urlProblem(value: string, rules: TargetRules): string | undefined {
  if (value.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL, such as https://example.com/webhooks';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http(s) URL';
  if (url.protocol === 'http:' && !rules.WEBHOOKS_ALLOW_HTTP)
    return 'must be an https URL (this server sends webhooks over http only when WEBHOOKS_ALLOW_HTTP is true)';
  if (url.username || url.password)
    return 'must not hold credentials: deliveries are signed, check the signature instead';
  const host = bareHost(url);
  const blocked = isIP(host) && !rules.WEBHOOKS_ALLOW_PRIVATE ? blockedAddress(host) : undefined;
  if (blocked) return `${host} is ${blocked}: webhooks are sent to public addresses only`;
  return undefined;
}

/** The addresses to connect to, all checked. */
export interface ResolvedTarget {
  url: URL;
  addresses: { address: string; family: 4 | 6 }[];
}

export class TargetRefused extends Error {}

/**
 * The one reason recorded for a name that does not resolve or resolves to an address webhooks
 * may not reach: which of the two, and the address, would tell a hook's owner what the
 * server's internal names are.
 */
export const NOT_PUBLIC = 'the host does not resolve to a public address';

/**
 * Resolves a hook's URL for one delivery and checks it: every address the name resolves to must
 * be allowed (a name that also resolves to an internal address is refused whole); the connection
 * goes to one of them. Throws TargetRefused saying why.
 */
export async function resolveTarget(value: string, rules: TargetRules): Promise<ResolvedTarget> {
  const problem = urlProblem(value, { ...rules, WEBHOOKS_ALLOW_PRIVATE: true });
  if (problem) throw new TargetRefused(`the URL ${problem}`);
  const url = new URL(value);
  const host = bareHost(url);
  const family = isIP(host);
  let addresses: { address: string; family: number }[];
  if (family !== 0) addresses = [{ address: host, family }];
  else {
    try {
      addresses = await lookup(host, { all: true, verbatim: true });
    } catch (error) {
      // Where private targets are allowed (a trusted network) the DNS error helps; elsewhere it is an oracle.
      const code = (error as NodeJS.ErrnoException).code ?? 'DNS error';
      throw new TargetRefused(rules.WEBHOOKS_ALLOW_PRIVATE ? `${host} does not resolve (${code})` : NOT_PUBLIC);
    }
  }
  if (!rules.WEBHOOKS_ALLOW_PRIVATE)
    for (const a of addresses) {
      const blocked = blockedAddress(a.address);
      if (!blocked) continue;
      // A literal is the owner's own; what a name resolves to stays ours (no oracle of internal names).
      throw new TargetRefused(
        family !== 0 ? `${host} is ${blocked}: webhooks are sent to public addresses only` : NOT_PUBLIC,
      );
    }
  if (addresses.length === 0) throw new TargetRefused(NOT_PUBLIC);
  return { url, addresses: addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 })) };
}
