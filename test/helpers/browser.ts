import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export interface TestBrowser {
  browser: Browser;
  /** A fresh context (own cookies) per flow. */
  context: () => Promise<BrowserContext>;
  close: () => Promise<void>;
}

/** Debian's headless Chromium through playwright-core (no browser download). */
export async function launchBrowser(): Promise<TestBrowser> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'sb-chromium-'));
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--crash-dumps-dir=${dataDir}`,
    ],
  });
  return {
    browser,
    context: () => browser.newContext(),
    close: async () => {
      await browser.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface CallbackServer {
  /** e.g. http://127.0.0.1:PORT/cb */
  redirectUri: string;
  close: () => Promise<void>;
}

/** A client application's redirect_uri: a loopback page that just says "signed in". */
export async function startCallbackServer(): Promise<CallbackServer> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><html lang="en"><title>Client</title><p>Back at the client</p></html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    redirectUri: `http://127.0.0.1:${port}/cb`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
