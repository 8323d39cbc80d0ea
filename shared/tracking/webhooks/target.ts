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
 * Why an IP address may not be a webhook target, or undefined for a public unicast one. An
 * IPv4-mapped IPv6 address is judged as the IPv4 address it maps; anything but plain unicast
 * (NAT64, 6to4 and Teredo, which embed IPv4 addresses, included) is refused.
 */
export function blockedAddress(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return 'not an IP address';
  }
  const range = parsed.range();
  if (range === 'unicast') return undefined;
  return RANGE_WORDS[range] ?? `in the special range "${range}"`;
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
      throw new TargetRefused(`${host} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'DNS error'})`);
    }
  }
  if (!rules.WEBHOOKS_ALLOW_PRIVATE)
    for (const a of addresses) {
      const blocked = blockedAddress(a.address);
      if (blocked)
        throw new TargetRefused(
          `${host === a.address ? host : `${host} resolves to ${a.address}, which`} is ${blocked}: webhooks are sent to public addresses only (WEBHOOKS_ALLOW_PRIVATE)`,
        );
    }
  if (addresses.length === 0) throw new TargetRefused(`${host} resolves to no address`);
  return { url, addresses: addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 })) };
}
