'use strict'
// The adapter core for Node web frameworks: Express, Fastify, Koa and Hono (and your own) share one
// `HttpLimiter`, which holds the limiter, the answer options and the client-address rules and decides
// each request in the same steps (skip, key, scope, rules, cost, one `hit`, the answer). Headers,
// bodies, statuses and client keys come from the Rust core, so every adapter in every language answers
// byte for byte alike. The adapters only read their framework's request and write its response.

const native = require('./native')
const { Limiter, LIMITER_OPTION_NAMES } = require('./limiter')
const { RatelockError, fromNative, invalidArgument } = require('./errors')
const check = require('./arguments')

/** Whether a logged warning goes out (tests may silence it with RATELOCK_QUIET=1). */
const warn = (message) => {
  if (process.env.RATELOCK_QUIET !== '1') console.warn(`ratelock: ${message}`)
}

const isFunction = (value) => typeof value === 'function'

/** The options an `HttpLimiter` takes beside a `Limiter`'s (any other is an invalid argument naming it). */
const HTTP_OWN_OPTIONS = [
  'limiter', 'keyGenerator', 'skip', 'standardHeaders', 'legacyHeaders', 'partitionKey', 'deniedBody',
  'statusCode', 'ipv6Subnet', 'trustedProxies', 'proxyHeader',
]
/** Every option an `HttpLimiter` takes: a `Limiter`'s (for the one it makes) and its own. */
const HTTP_LIMITER_OPTIONS = [...LIMITER_OPTION_NAMES, ...HTTP_OWN_OPTIONS]
/** What a limit is made of (`HttpLimiter.limit`). */
const LIMIT_OPTIONS = [
  'rules', 'scope', 'keyGenerator', 'cost', 'skip', 'skipSuccessfulRequests', 'skipFailedRequests', 'requestWasSuccessful',
]
/**
 * The peers' options that rule text replaces (express-rate-limit's, @fastify/rate-limit's, koa-ratelimit's),
 * each with what to write instead: a migrating app learns the spelling from the error.
 */
const RULES_INSTEAD = "write the limit and its window as rule text instead: rules: '100/15 minutes' (or '100 per 15 minutes')"
const PEER_OPTION_HINTS = Object.freeze({
  windowMs: RULES_INSTEAD,
  max: RULES_INSTEAD,
  limit: RULES_INSTEAD,
  timeWindow: RULES_INSTEAD,
  duration: RULES_INSTEAD,
  store: 'give url (a Redis URL) or limiter instead: ratelock keeps its own store',
  standardHeader: "the option is standardHeaders ('draft-6', 'draft-7', 'draft-8', 'draft-11' or true)",
})
/** What every framework adapter takes beside them: one to share, the outage shorthand, and its limit. */
const ADAPTER_OPTIONS = [...new Set([...HTTP_LIMITER_OPTIONS, 'http', 'passOnStoreError', ...LIMIT_OPTIONS])]

class HttpLimiter {
  #options
  #client

  /**
   * @param {object} [options] `limiter` (a ratelock `Limiter`), or the options of one to make (`url`,
   *   `prefix`, `timeoutMs`, `tlsRootCa`, `tlsClientCert`, `tlsClientKey`, `sentinelUsername`, `sentinelPassword`,
   *   `maxKeys`, `whenFull`, `onError`, `instances`,
   *   `defaultAlgorithm`, `clock`, `shadow`, `denyCache`, `denyCacheMaxAgeMs`, `metrics`);
   *   `keyGenerator(...request)` and `skip(...request)`, the defaults of every limit; the answer
   *   options `standardHeaders`
   *   ('draft-6' | 'draft-7' | 'draft-8' | 'draft-11' | 'latest', true = the latest, false = none; default
   *   the latest), `legacyHeaders`, `partitionKey`, `deniedBody` ('text' | 'json' | 'problem'),
   *   `statusCode`; the client address options `ipv6Subnet` (56), `trustedProxies` (a hop count or
   *   networks; none by default), `proxyHeader` ('x-forwarded-for' | 'forwarded').
   */
  constructor(options = {}) {
    if (options === null) throw invalidArgument('options', 'expected an options object')
    check.options('options', options, HTTP_LIMITER_OPTIONS)
    for (const name of ['keyGenerator', 'skip']) {
      if (options[name] !== undefined && !isFunction(options[name])) throw invalidArgument(name, 'expected a function')
    }
    // No I/O here (lazy start): an app boots while Redis is down; its requests follow `onError`.
    this.limiter =
      options.limiter ?? new Limiter(Object.fromEntries(LIMITER_OPTION_NAMES.map((name) => [name, options[name]])))
    this.keyGenerator = options.keyGenerator
    this.skip = options.skip
    try {
      this.#options = new native.NativeHttpOptions({
        standardHeaders: options.standardHeaders,
        legacyHeaders: options.legacyHeaders,
        partitionKey: options.partitionKey,
        deniedBody: options.deniedBody,
        statusCode: options.statusCode,
        defaultAlgorithm: this.limiter.defaultAlgorithm,
      })
      this.#client = new native.NativeClientAddress({
        ipv6Subnet: options.ipv6Subnet,
        trustedProxies: options.trustedProxies,
        proxyHeader: options.proxyHeader,
      })
    } catch (error) {
      throw fromNative(error)
    }
    /** The proxy header adapters must read (lower case), or `null` when no proxy is trusted. */
    this.proxyHeader = this.#client.proxyHeader
  }

  /**
   * A limit, checked now where it can be (rule text parses; functions are functions), so a bad limit
   * fails when the app starts: `rules` (text, or a function of the request answering text, e.g. a
   * tenant's plan), `scope` (default 'default'), `keyGenerator`, `cost` (a number or a function), `skip`;
   * and which requests count once answered, as express-rate-limit says it: `skipSuccessfulRequests`
   * and `skipFailedRequests` give an allowed request's units back when it succeeded or failed, as
   * `requestWasSuccessful(...request)` tells (default: a status below 400; a response that was not sent
   * whole failed).
   * @param {{ rules: any, scope?: string, keyGenerator?: Function, cost?: any, skip?: Function,
   *   skipSuccessfulRequests?: boolean, skipFailedRequests?: boolean, requestWasSuccessful?: Function }} limit
   */
  limit(limit) {
    const {
      rules, scope = 'default', keyGenerator, cost = 1, skip,
      skipSuccessfulRequests = false, skipFailedRequests = false, requestWasSuccessful,
    } = check.options('limit', limit, LIMIT_OPTIONS)
    if (typeof rules === 'string') {
      try {
        native.parseRules(rules, this.limiter.defaultAlgorithm)
      } catch (error) {
        throw fromNative(error)
      }
    } else if (!isFunction(rules)) {
      throw invalidArgument('rules', 'expected rule text or a function of the request')
    }
    for (const [name, value] of [['keyGenerator', keyGenerator], ['skip', skip], ['requestWasSuccessful', requestWasSuccessful]]) {
      if (value !== undefined && !isFunction(value)) throw invalidArgument(name, 'expected a function')
    }
    for (const [name, value] of [['skipSuccessfulRequests', skipSuccessfulRequests], ['skipFailedRequests', skipFailedRequests]]) {
      if (typeof value !== 'boolean') throw invalidArgument(name, 'expected true or false')
    }
    if (!isFunction(cost) && !(Number.isSafeInteger(cost) && cost >= 1)) {
      throw invalidArgument('cost', 'expected an integer >= 1 or a function of the request')
    }
    if (typeof scope !== 'string') throw invalidArgument('scope', 'expected a string')
    return Object.freeze({
      rules, scope, keyGenerator, cost, skip, skipSuccessfulRequests, skipFailedRequests, requestWasSuccessful,
    })
  }

  /**
   * The key a request is counted on when no `keyGenerator` gives one: the client's address, from `peer`
   * (the connection's) and `forwarded` (the value of `proxyHeader`) as the trusted proxies say.
   */
  clientKey(peer, forwarded) {
    return this.#client.key(peer ?? null, forwarded ?? null)
  }

  /**
   * Decides one request. `args` are what the framework passes to functions of the request (Express:
   * `[req, res]`, Koa and Hono: `[ctx]`, Fastify: `[request, reply]`); `peer` is the connection's address
   * and `forwarded` the value of `proxyHeader` (read only when a proxy is trusted). Resolves to
   * `{ answer, decision, counted, key }`: `answer` is `null` when skipped; `decision` is `null` when
   * skipped, keyless or answered by the outage status; `counted` is what the request spent when the limit
   * may give it back once answered (`skipSuccessfulRequests`, `skipFailedRequests`), for [`settle`], else
   * `null`; `key` is the request's key before its scope (the `keyGenerator`'s, else the client's address),
   * `null` when skipped or unusable. A bug (a protocol or configuration error) rejects.
   */
  async check(limit, args, peer, forwarded) {
    const skip = limit.skip ?? this.skip
    if (skip !== undefined && (await skip(...args))) return { answer: null, decision: null, counted: null, key: null }
    const keyGenerator = limit.keyGenerator ?? this.keyGenerator
    const key = keyGenerator !== undefined ? await keyGenerator(...args) : this.clientKey(peer, forwarded)
    if (typeof key !== 'string' && !Buffer.isBuffer(key)) {
      warn(`the keyGenerator answered ${key === null ? 'null' : typeof key}, not a string or Buffer: answering 400`)
      return { answer: this.#options.badKey(), decision: null, counted: null, key: null }
    }
    let joined
    try {
      joined = native.scopedKey(limit.scope, key)
    } catch (error) {
      warn(`the request's key is not usable (${fromNative(error).message}): answering 400`)
      return { answer: this.#options.badKey(), decision: null, counted: null, key: null }
    }
    // A value that is not a function is used as it is: awaiting it would cost a microtask hop.
    const rules = isFunction(limit.rules) ? await limit.rules(...args) : limit.rules
    const cost = isFunction(limit.cost) ? await limit.cost(...args) : limit.cost
    let decision
    try {
      decision = await this.limiter.hit(joined, rules, { cost })
    } catch (error) {
      const answer = error instanceof RatelockError ? this.#options.failure(error.code ?? '') : null
      if (answer === null) throw error
      warn(`the store failed (${error.message}): answering ${answer.status}`)
      return { answer, decision: null, counted: null, key }
    }
    const answer = this.#options.answer(
      rules,
      decision.allowed,
      decision.remaining,
      decision.resetAfterMs,
      decision.retryAfterMs,
      decision.ruleIndex,
      decision.degraded,
      key,
      Date.now(),
      decision.limit,
    )
    // Only what the rules spent can be given back: an allowed hit decided by the rules, all of them
    // enforced. A degraded one spent nothing, an allow-listed one neither, and one let through in shadow
    // spent nothing on the rule that would deny (a refund gives back to every rule).
    const mayGiveBack =
      (limit.skipSuccessfulRequests || limit.skipFailedRequests) &&
      decision.allowed &&
      !decision.degraded &&
      !decision.wouldDeny &&
      decision.reason === 'rule'
    return { answer, decision, counted: mayGiveBack ? { key: joined, rules, cost } : null, key }
  }

  /**
   * Gives a request's units back once it is answered, when the limit does not count its outcome
   * (`skipSuccessfulRequests`, `skipFailedRequests`). `counted` is `check`'s; `status` is the response's,
   * or `null` when it was not sent whole (closed early, or an error): then it failed. Never rejects: the
   * response is gone, so a failure (of `requestWasSuccessful`, or of the refund) is a warning, and the
   * request stays counted.
   */
  async settle(limit, counted, args, status) {
    if (counted === null) return
    try {
      let succeeded = status !== null
      if (succeeded) succeeded = limit.requestWasSuccessful ? Boolean(await limit.requestWasSuccessful(...args)) : status < 400
      if (!(succeeded ? limit.skipSuccessfulRequests : limit.skipFailedRequests)) return
      await this.limiter.refund(counted.key, counted.rules, { cost: counted.cost })
    } catch (error) {
      warn(`an answered request was to be uncounted but stays counted (${error?.name}: ${error?.message})`)
    }
  }
}

/**
 * Settles `counted` (see `HttpLimiter.settle`) when the Node response `res` ends: with its status once
 * it is sent whole, as failed when it closes first or fails. Express and Fastify (its raw response).
 */
function settleWhenSent(http, limit, counted, args, res) {
  if (counted === null) return
  let settled = false
  const settle = (status) => {
    if (settled) return
    settled = true
    http.settle(limit, counted, args, status)
  }
  // Ended while `check` waited for the store: its events have gone by.
  if (res.writableFinished) return settle(res.statusCode)
  if (res.destroyed || res.closed) return settle(null)
  res.once('finish', () => settle(res.statusCode))
  // After 'finish' this changes nothing; before it, the client went away.
  res.once('close', () => settle(null))
  res.once('error', () => settle(null))
}

/** `headers` of an answer (`[name, value, name, value, ...]`) as [name, value] pairs. */
function* headerPairs(answer) {
  for (let at = 0; at < answer.headers.length; at += 2) yield [answer.headers[at], answer.headers[at + 1]]
}

/** The options every adapter shares, taken out of an adapter's options for its `HttpLimiter`. */
function httpLimiterOf(options, own = []) {
  if (options === null) throw invalidArgument('options', 'expected an options object')
  // A peer's option name (express-rate-limit's `windowMs`, `max`) would otherwise be ignored.
  check.options('options', options, [...ADAPTER_OPTIONS, ...own], PEER_OPTION_HINTS)
  if (options.passOnStoreError !== undefined) {
    if (options.limiter !== undefined) {
      throw invalidArgument('passOnStoreError', "give the limiter onError: 'allow' instead")
    }
    if (options.onError !== undefined) throw invalidArgument('passOnStoreError', "use onError alone")
  }
  const onError = options.passOnStoreError ? 'allow' : options.onError
  if (options.http !== undefined) return options.http
  const given = Object.fromEntries(HTTP_LIMITER_OPTIONS.map((name) => [name, options[name]]))
  return new HttpLimiter({ ...given, onError })
}

/**
 * A middleware's `HttpLimiter` (`httpLimiterOf(options)`) and the one limit it checks on every request,
 * from its options' `rules` (default '60/minute'), `scope`, `keyGenerator`, `cost` and `skip`.
 * @param {object} options
 */
function middlewareOf(options, own) {
  const http = httpLimiterOf(options, own)
  const limit = http.limit({
    rules: options.rules ?? '60/minute',
    scope: options.scope,
    keyGenerator: options.keyGenerator,
    cost: options.cost,
    skip: options.skip,
    skipSuccessfulRequests: options.skipSuccessfulRequests,
    skipFailedRequests: options.skipFailedRequests,
    requestWasSuccessful: options.requestWasSuccessful,
  })
  return { http, limit }
}

/** The peer address of a Node request (`IncomingMessage`). */
const peerOf = (incoming) => incoming?.socket?.remoteAddress ?? null

/** The proxy header of a Node request, when the adapter reads one (several lines joined by commas). */
function forwardedOf(http, incoming) {
  if (http.proxyHeader === null) return null
  const value = incoming?.headers?.[http.proxyHeader]
  return Array.isArray(value) ? value.join(', ') : (value ?? null)
}

module.exports = {
  HttpLimiter, headerPairs, httpLimiterOf, middlewareOf, peerOf, forwardedOf, settleWhenSent, scopedKey: native.scopedKey,
}
