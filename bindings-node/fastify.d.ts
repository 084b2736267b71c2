// Types of `ratelock/fastify` (fastify.js), structural so that Fastify itself is not required.

import type { Decision } from './index'
import type { AdapterOptions, Awaitable, CountingOptions, HttpAnswer } from './http'

/** The plugin: `await fastify.register(ratelockFastify, { url, rules: '100/minute' })`. */
declare function ratelockFastify(fastify: any, options?: ratelockFastify.RateLimitPluginOptions): Promise<void>
declare namespace ratelockFastify {
  /** What `errorResponseBuilder` is given. */
  export interface ErrorResponseContext {
    answer: HttpAnswer
    decision: Decision | null
    statusCode: number
  }

  export interface RateLimitPluginOptions<Request = any, Reply = any> extends AdapterOptions<[Request, Reply]> {
    /** Limit every route (default true); routes may set `config: { rateLimit: { ... } | false }`. */
    global?: boolean
    /** Keys (or a function of the request and its key) let through uncounted. */
    allowList?: string[] | ((request: Request, key: string) => Awaitable<boolean>)
    /** The hook the check runs in (default `'onRequest'`). */
    hook?: 'onRequest' | 'preHandler'
    /** A refusal body of your own. */
    errorResponseBuilder?: (request: Request, context: ErrorResponseContext) => Awaitable<unknown>
    /** Told of each request a limit let through, with the key it counted on (awaited before the route runs). */
    onExceeding?: (request: Request, key: string | Buffer) => Awaitable<unknown>
    /** Told of each request a limit refused, with the key it counted on (awaited before the refusal is sent). */
    onExceeded?: (request: Request, key: string | Buffer) => Awaitable<unknown>
  }

  /** A route's own limit, under `config.rateLimit`. */
  export interface RouteRateLimit<Request = any, Reply = any> extends CountingOptions<[Request, Reply]> {
    rules: string | ((request: Request, reply: Reply) => Awaitable<string>)
    scope?: string
    keyGenerator?: (request: Request, reply: Reply) => Awaitable<string | Buffer | null | undefined>
    cost?: number | ((request: Request, reply: Reply) => Awaitable<number>)
    skip?: (request: Request, reply: Reply) => Awaitable<boolean>
    /** This route's `onExceeding`, in place of the plugin's (`null`: none here). */
    onExceeding?: ((request: Request, key: string | Buffer) => Awaitable<unknown>) | null
    /** This route's `onExceeded`, in place of the plugin's (`null`: none here). */
    onExceeded?: ((request: Request, key: string | Buffer) => Awaitable<unknown>) | null
  }
  export { ratelockFastify, ratelockFastify as default }
}
export = ratelockFastify
