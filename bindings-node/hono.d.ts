// Types of `ratelock/hono` (hono.js), structural so that Hono itself is not required.

import type { Decision } from './index'
import type { AdapterOptions, Awaitable, HttpAnswer } from './http'

/** What a refusal `handler` is given besides the context. */
export interface RefusalContext {
  answer: HttpAnswer
  decision: Decision | null
  message: unknown
  /** The refusal's status (`answer.status`), as hono-rate-limiter names it; `c` has it already. */
  statusCode: number
}

export interface RateLimitOptions<C = any> extends AdapterOptions<[C]> {
  /** The connection's address (default: the Node socket's, under `@hono/node-server`). */
  getPeer?: (c: C) => string | null | undefined
  /** A refusal body of your own (a string is sent as text, else as JSON), or a function of the context. */
  message?: unknown | ((c: C) => Awaitable<unknown>)
  /**
   * Answers a refusal (hono-rate-limiter's name): the response it returns is sent. The refusal's status
   * and headers are set on `c` first; a response it builds itself gets the headers it lacks.
   */
  handler?: (c: C, next: () => Promise<void>, refusal: RefusalContext) => Awaitable<Response | void>
}

/** The middleware: `app.use(rateLimit({ url, rules: '100/minute' }))`; the decision is `c.get('rateLimit')`. */
export declare function rateLimit<C = any>(
  options?: RateLimitOptions<C>,
): (c: C, next: () => Promise<void>) => Promise<Response | void>
