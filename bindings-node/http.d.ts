// Types of `ratelock/http` (http.js): the adapter core every framework adapter stands on.

/// <reference types="node" />

import type { Decision, Limiter, LimiterOptions } from './index'

/** What an adapter sends: proceed (adding `headers` to the app's response), or refuse. */
export interface HttpAnswer {
  proceed: boolean
  /** The refusal's status (429, or 503 for an outage, 400 for a request with no usable key). */
  status: number
  /** Names and values, alternating: `[name, value, name, value, ...]`. */
  headers: string[]
  contentType: string
  body: string
}

/** The result of one check: `answer` is `null` when skipped; `decision` is `null` when there was none. */
export interface Checked {
  answer: HttpAnswer | null
  decision: Decision | null
  /** What the request spent, when its limit may give it back once answered (for `settle`); else `null`. */
  counted: Counted | null
  /** The request's key before its scope (the `keyGenerator`'s, else the client's address); `null` when skipped or unusable. */
  key: string | Buffer | null
}

/** What an allowed request spent: its scoped key, its rules and its cost. */
export interface Counted {
  readonly key: string | Buffer
  readonly rules: string
  readonly cost: number
}

/** Which answered requests stay counted, with express-rate-limit's names. */
export interface CountingOptions<Args extends unknown[] = unknown[]> {
  /** Gives a request's units back once it succeeded (default false): e.g. count only failed logins. */
  skipSuccessfulRequests?: boolean
  /** Gives a request's units back once it failed (default false). */
  skipFailedRequests?: boolean
  /** Whether a request sent whole succeeded (default: its status is below 400). */
  requestWasSuccessful?: (...request: Args) => Awaitable<boolean>
}

/** A value, or a promise of one. */
export type Awaitable<T> = T | Promise<T>

/** The answer and client-address options every adapter takes. */
export interface HttpOptions {
  /** The IETF fields: a draft's name, `true` (the latest, the default) or `false` (none). */
  standardHeaders?: 'draft-6' | 'draft-7' | 'draft-8' | 'draft-11' | 'latest' | boolean
  /** `X-RateLimit-Limit`, `-Remaining`, `-Reset` (default false). */
  legacyHeaders?: boolean
  /** A `pk` parameter naming the client's partition by a hash of its key (drafts 8 and 11). */
  partitionKey?: boolean
  /** The body of a refusal: plain text (the default), JSON, or RFC 9457 problem details. */
  deniedBody?: 'text' | 'json' | 'problem'
  /** The status of a denial (default 429). */
  statusCode?: number
  /** IPv6 clients sharing this many leading bits share a key (1 to 128, default 56). */
  ipv6Subnet?: number
  /** Proxies whose header is believed: a hop count, or networks (`'10.0.0.0/8'`, `'loopback'`, `'private'`). */
  trustedProxies?: number | string[]
  /** The header those proxies write (default `'x-forwarded-for'`). */
  proxyHeader?: 'x-forwarded-for' | 'forwarded'
}

/** Options of an `HttpLimiter`: a limiter (or what makes one), answer options, and per-limit defaults. */
export interface HttpLimiterOptions<Args extends unknown[] = unknown[]> extends HttpOptions, LimiterOptions {
  limiter?: Limiter
  keyGenerator?: (...request: Args) => Awaitable<string | Buffer | null | undefined>
  skip?: (...request: Args) => Awaitable<boolean>
}

/** One limit: `rules` (text or a function of the request), `scope`, `keyGenerator`, `cost`, `skip`. */
export interface LimitOptions<Args extends unknown[] = unknown[]> extends CountingOptions<Args> {
  rules: string | ((...request: Args) => Awaitable<string>)
  /** Keeps this limit's buckets apart from every other limit's (default `'default'`). */
  scope?: string
  keyGenerator?: (...request: Args) => Awaitable<string | Buffer | null | undefined>
  cost?: number | ((...request: Args) => Awaitable<number>)
  skip?: (...request: Args) => Awaitable<boolean>
}

/** A limit made by `HttpLimiter.limit` (checked when made). */
export interface Limit<Args extends unknown[] = unknown[]> extends Readonly<LimitOptions<Args>> {
  readonly scope: string
}

/** The adapter core: one per app, shared by its limits. */
export declare class HttpLimiter<Args extends unknown[] = unknown[]> {
  constructor(options?: HttpLimiterOptions<Args>)
  readonly limiter: Limiter
  /** The proxy header to read (lower case), or `null` when no proxy is trusted. */
  readonly proxyHeader: string | null
  limit(options: LimitOptions<Args>): Limit<Args>
  /** The key a request is counted on without a `keyGenerator`: the client's address as the trusted proxies say. */
  clientKey(peer: string | null, forwarded: string | null): string
  /** Decides one request: `args` go to the limit's functions; `peer` is the connection's address. */
  check(limit: Limit<Args>, args: Args, peer: string | null, forwarded: string | null): Promise<Checked>
  /**
   * Gives `counted` back when the limit does not count the request's outcome: `status` is the
   * response's, or `null` when it was not sent whole (then it failed). Never rejects (a failure warns).
   */
  settle(limit: Limit<Args>, counted: Counted | null, args: Args, status: number | null): Promise<void>
}

/** The `[name, value]` pairs of an answer's headers. */
export declare function headerPairs(answer: HttpAnswer): IterableIterator<[string, string]>

/** `<scope>:<key>`, the scope's `%` and `:` escaped: no two (scope, key) pairs meet. */
export declare function scopedKey(scope: string, key: string): string
export declare function scopedKey(scope: string, key: Buffer): Buffer

/** What every adapter's options share. */
export interface AdapterOptions<Args extends unknown[]> extends HttpLimiterOptions<Args>, CountingOptions<Args> {
  /** An `HttpLimiter` to share between adapters (its options then come from it). */
  http?: HttpLimiter<Args>
  /** Rule text (default `'60/minute'`), or a function of the request answering text. */
  rules?: string | ((...request: Args) => Awaitable<string>)
  /** Keeps this adapter's buckets apart from other limits (default `'default'`). */
  scope?: string
  /** Units a request takes (default 1). */
  cost?: number | ((...request: Args) => Awaitable<number>)
  /** Where the decision is put (default `'rateLimit'`). */
  requestPropertyName?: string
}
