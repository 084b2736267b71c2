// Types of `ratelock/express` (express.js), structural so that Express itself is not required.

import type { Decision, Limiter } from './index'

/** The parts of a request and response the middleware uses. */
export interface RequestLike {
  ip?: string
  [property: string]: unknown
}
export interface ResponseLike {
  setHeader(name: string, value: string): unknown
  statusCode: number
  end(body?: string): unknown
}
export type Next = (error?: unknown) => void

export interface RateLimitHandlerOptions extends Required<Omit<RateLimitOptions, 'limiter' | 'url' | 'prefix' | 'timeoutMs' | 'onError' | 'instances'>> {
  decision: Decision
}

export interface RateLimitOptions<Req = any, Res = any> {
  /** A limiter to use; otherwise one is made from `url`, `prefix`, `timeoutMs`, `onError` and `instances`. */
  limiter?: Limiter
  url?: string
  prefix?: string
  timeoutMs?: number
  /** What an outage answers (see `LimiterOptions.onError`); default `'raise'`. */
  onError?: 'raise' | 'allow' | 'deny' | 'local'
  /** Under `onError: 'local'`: how many processes share the limits. */
  instances?: number
  /** Rule text (default `'60/minute'`), or a function of the request. */
  rules?: string | ((req: Req, res: Res) => string | Promise<string>)
  /** The key of a request (default: `req.ip`). */
  keyGenerator?: (req: Req, res: Res) => string | Buffer | Promise<string | Buffer>
  /** Requests to let through uncounted. */
  skip?: (req: Req, res: Res) => boolean | Promise<boolean>
  /** Units a request takes (default 1). */
  cost?: number | ((req: Req, res: Res) => number | Promise<number>)
  /** Answers a rejected request (default: `statusCode` with `message`). */
  handler?: (req: Req, res: Res, next: Next, options: RateLimitHandlerOptions) => unknown
  statusCode?: number
  message?: unknown
  /** IETF `RateLimit` headers: a draft, `true` (= 'draft-7', the default) or `false`. */
  standardHeaders?: 'draft-6' | 'draft-7' | 'draft-8' | boolean
  /** `X-RateLimit-Limit`, `-Remaining`, `-Reset` (default true). */
  legacyHeaders?: boolean
  /** Let requests through when the store is down (default false: the error goes to `next`). */
  passOnStoreError?: boolean
  /** Where the decision is put on the request (default `'rateLimit'`). */
  requestPropertyName?: string
}

/** The middleware: `app.use(rateLimit({ url, rules: '100/minute' }))`. */
export declare function rateLimit<Req = any, Res = any>(
  options?: RateLimitOptions<Req, Res>,
): (req: Req, res: Res, next: Next) => Promise<void>
