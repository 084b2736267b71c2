// Types of `ratelock/hono` (hono.js), structural so that Hono itself is not required.

import type { AdapterOptions, Awaitable } from './http'

export interface RateLimitOptions<C = any> extends AdapterOptions<[C]> {
  /** The connection's address (default: the Node socket's, under `@hono/node-server`). */
  getPeer?: (c: C) => string | null | undefined
  /** A refusal body of your own (a string is sent as text, else as JSON), or a function of the context. */
  message?: unknown | ((c: C) => Awaitable<unknown>)
}

/** The middleware: `app.use(rateLimit({ url, rules: '100/minute' }))`; the decision is `c.get('rateLimit')`. */
export declare function rateLimit<C = any>(
  options?: RateLimitOptions<C>,
): (c: C, next: () => Promise<void>) => Promise<Response | void>
