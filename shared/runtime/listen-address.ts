import type { AddressInfo } from 'node:net';

/**
 * Where a server listens, for its start log line: `listen` is the bound address (`0.0.0.0:3000`:
 * every interface), `origin` a URL of it from this host (loopback for a wildcard, which is no
 * place to connect to).
 */
export function listenAddress(host: string, address: AddressInfo): { listen: string; origin: string } {
  const bracket = (h: string) => (h.includes(':') ? `[${h}]` : h);
  const wildcard = host === '0.0.0.0' || host === '::' || host === '';
  return {
    listen: `${bracket(address.address)}:${address.port}`,
    origin: `http://${wildcard ? '127.0.0.1' : bracket(host)}:${address.port}`,
  };
}
