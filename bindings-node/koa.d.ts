// Types of `ratelock/koa` (koa.js), structural so that Koa itself is not required.

import type { AdapterOptions, Awaitable } from './http'

export interface RateLimitOptions<Ctx = any> extends AdapterOptions<[Ctx]> {
  /** A refusal body of your own, or a function of the context. */
  message?: unknown | ((ctx: Ctx) => Awaitable<unknown>)
  /** Refuse by `ctx.throw(status, body, { headers })` (koa-ratelimit's name), for the app's error middleware. */
  throw?: boolean
}

/** The middleware: `app.use(rateLimit({ url, rules: '100/minute' }))`; the decision is on `ctx.state`. */
export declare function rateLimit<Ctx = any>(
  options?: RateLimitOptions<Ctx>,
): (ctx: Ctx, next: () => Promise<unknown>) => Promise<unknown>
