// Types of `ratelock/express` (express.js), structural so that Express itself is not required.

import type { Decision } from './index'
import type { AdapterOptions, Awaitable, HttpAnswer } from './http'

export type Next = (error?: unknown) => void

/** What the `handler` of a refusal is given. */
export interface RefusalContext {
  answer: HttpAnswer
  decision: Decision | null
  message: unknown
  /** The refusal's status (`answer.status`), as express-rate-limit names it. */
  statusCode: number
}

export interface RateLimitOptions<Req = any, Res = any> extends AdapterOptions<[Req, Res]> {
  /** Answers a refused request (default: the core's status, headers and body). */
  handler?: (req: Req, res: Res, next: Next, context: RefusalContext) => unknown
  /** A refusal body of your own (a string is sent as text, else as JSON), or a function of the request. */
  message?: unknown | ((req: Req, res: Res) => Awaitable<unknown>)
  /** express-rate-limit's name for `onError: 'allow'`. */
  passOnStoreError?: boolean
}

/** The middleware: `app.use(rateLimit({ url, rules: '100/minute' }))`. */
export declare function rateLimit<Req = any, Res = any>(
  options?: RateLimitOptions<Req, Res>,
): (req: Req, res: Res, next: Next) => Promise<void>
