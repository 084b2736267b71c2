'use strict'
// `Limiter`: every rule of a key checked in one round trip, all or nothing. Connects on first use.
// Rule texts are parsed once per limiter by the core; `#rules` only finds the core's prepared rules
// (and their texts and periods, read once) by the JavaScript string, without crossing into the addon.
// Memory-store calls answer at once; calls on one `redis://` or `rediss://` server go over a socket on
// this thread (`wire-socket.js`, TLS through node:tls); other Redis calls (cluster, Sentinel, Unix
// sockets) are submitted to the addon's runtime and their answers come back in batches through one
// pending `nextBatch()` at a time, so many answers share one hop back to this thread.

const native = require('./native')
const check = require('./arguments')
const { ConfigurationError, fromCode, fromNative, invalidArgument, rethrow } = require('./errors')
const { Connection } = require('./connection')
const { FIELDS, decision } = require('./decision')
const { WireClient } = require('./wire-socket')
const { LONGEST_TIMER_MS } = require('./timers')
const { onAbort } = require('./abort-watch')

/** A memory-store check, answered into the checker's numbers (the addon makes this function once). */
const checkInMemory = native.memoryCheckFunction()

/** Distinct rule texts remembered per limiter before the memo starts over (the core's own bound). */
const RULES_CACHE_LIMIT = 1024
/** A limiter's own options (beside the store's), with their type checks. */
const LIMITER_OPTIONS = {
  onError: check.optionalString,
  defaultAlgorithm: check.optionalString,
  clock: check.optionalString,
  instances: check.optionalNumber,
  shadow: check.optionalBoolean,
  denyCache: check.optionalNumber,
  denyCacheMaxAgeMs: check.optionalNumber,
  metrics: check.optionalMetrics,
}
/** Every option a `Limiter` takes, by name (an `HttpLimiter` passes these on). */
const LIMITER_OPTION_NAMES = Object.freeze([...Object.keys(check.STORE_OPTIONS), ...Object.keys(LIMITER_OPTIONS)])

/** Each store call's timeout when `timeoutMs` is not given (the addon's default too). */
const DEFAULT_TIMEOUT_MS = 1000

class Limiter {
  #settings
  #native = null
  /** On the memory store: the addon's checker, answering into `#out` at once. */
  #memory = null
  #wire = null
  #connection
  #rules = new Map()
  #out = new Float64Array(FIELDS)
  #waiting = new Map()
  #nextId = 0
  #draining = false

  /**
   * @param {object} [options] `url` (none: the embedded memory store), `prefix`, `onError`
   *   ('raise' | 'allow' | 'deny' | 'local'), `timeoutMs`, `defaultAlgorithm`, `clock` ('store' |
   *   'local'), `instances` (under 'local': how many processes share the limits), `shadow` (a denial
   *   is let through with `wouldDeny` set: for rolling a limit out), `denyCache` (a local deny cache
   *   of about that many keys: a denied key's further calls are denied from memory, `cached: true`),
   *   `denyCacheMaxAgeMs` (the longest it holds a denial: a change made in another process shows by then),
   *   `metrics` (a `Metrics` of `ratelock/otel`: every decision and round trip is recorded), and the
   *   store options every kind takes: `tlsRootCa` (PEM: a private CA for `rediss://`), `tlsClientCert`
   *   and `tlsClientKey` (PEM: a client certificate for a server that asks for one), `sentinelPassword`
   *   and `sentinelUsername` (the sentinels' own credentials, when they differ from the master's),
   *   `maxKeys` and `whenFull` (the memory store's bound, and 'refuse' or 'evict' past it).
   * Nothing is opened here or before the first call (lazy start); `connect()` or `ping()` fail at boot.
   */
  constructor(options) {
    this.#settings = check.kindSettings('options', options, LIMITER_OPTIONS)
    this.#connection = new Connection(() => native.connectLimiter(this.#settings).then((limiter) => this.#opened(limiter)))
  }

  /**
   * Reaches the store now (a PING) and resolves to this limiter; rejects with configuration errors
   * and outages alike, whatever `onError` says. For a service that wants to fail at boot.
   */
  async connect() {
    await this.ping()
    return this
  }

  /** Reaches the store now (a PING): rejects with configuration errors and outages alike. */
  async ping() {
    const limiter = this.#native ?? (await this.#connection.get())
    return limiter.ping().catch(rethrow)
  }

  /** Where the store's circuit breaker stands in this process: 'closed', 'open', 'half-open', or
   * `null` for the memory store. Before the first call it is the shared store's breaker (closed unless
   * another limiter on the same store saw it fail); a URL that cannot be used throws, as a call would. */
  get breakerState() {
    if (this.#native !== null) return this.#native.breakerState
    try {
      return native.breakerStateOf(this.#settings.store)
    } catch (error) {
      throw fromNative(error)
    }
  }

  /** Takes `cost` units from every rule for `key` if every enforcing rule allows it (a `shadow` rule that denies is not charged); otherwise takes nothing. */
  hit(key, rules, options) {
    return this.#check(true, key, rules, options)
  }

  /** Answers what `hit` would answer, without spending anything. */
  peek(key, rules, options) {
    return this.#check(false, key, rules, options)
  }

  /**
   * `hit`, answered at once without a Promise: the memory store only (a limiter with no `url`, or
   * `memory://`). On a Redis store it throws a `ConfigurationError`: use `hit`.
   */
  hitSync(key, rules, options) {
    return this.#checkNow('hitSync', true, key, rules, options)
  }

  /** `peek`, answered at once without a Promise: the memory store only (see `hitSync`). */
  peekSync(key, rules, options) {
    return this.#checkNow('peekSync', false, key, rules, options)
  }

  /** Forgets the state of every given rule for `key`. */
  async reset(key, rules) {
    check.key('key', key)
    check.rules(rules)
    const [limiter, parsed] = await this.#connectedWith(rules)
    return limiter.reset(key, parsed.rules).catch(rethrow)
  }

  /**
   * Gives back `options.cost` units (default 1) of every rule for `key` (a request that failed
   * downstream should not count), where the algorithm can; resolves to the decision a `peek` of the
   * same cost gives afterwards. An outage rejects, whatever `onError` says.
   */
  async refund(key, rules, options) {
    check.key('key', key)
    check.rules(rules)
    const { cost, nowMs } = costAndClock(options)
    const [limiter, parsed] = await this.#connectedWith(rules)
    const values = await limiter.refund(key, parsed.rules, cost, nowMs).catch(rethrow)
    return decision(values, 0, parsed)
  }

  /**
   * Books the earliest slot within `options.maxWaitMs` at which every rule admits `options.cost` units
   * (default 1; gcra, token_bucket and leaky_bucket rules): resolves to an allowed decision whose
   * `retryAfterMs` is the wait before acting, or to the denial (nothing spent) when the slot is
   * further. Waiters are served in booking order, one round trip each. The units are spent at booking:
   * give them back with `refund` if the caller gives up.
   */
  async reserve(key, rules, options) {
    check.key('key', key)
    check.rules(rules)
    const given = check.options('options', options, ['cost', 'maxWaitMs', 'nowMs'])
    const cost = check.optionalNumber('cost', given.cost)
    const maxWaitMs = check.optionalNumber('maxWaitMs', given.maxWaitMs)
    if (maxWaitMs === undefined) throw invalidArgument('maxWaitMs', 'is required: the longest wait for a slot, in ms')
    const nowMs = check.optionalNumber('nowMs', given.nowMs)
    const [limiter, parsed] = await this.#connectedWith(rules)
    const values = await limiter.reserve(key, parsed.rules, cost, maxWaitMs, nowMs).catch(rethrow)
    return decision(values, 0, parsed)
  }

  /**
   * Reserves (see `reserve`), then waits until the slot: resolves to the reservation's decision, allowed
   * when the caller may act now, or the denial when the slot was further (nothing spent, no wait).
   * `options.signal` (an `AbortSignal`) cancels the wait: the booking is given back with `refund` and
   * the promise rejects with the signal's reason (also when the refund fails: that failure is a
   * process warning, code `RATELOCK_REFUND_FAILED`).
   */
  async wait(key, rules, options) {
    const given = check.options('options', options, ['cost', 'maxWaitMs', 'signal'])
    const signal = check.optionalSignal('signal', given.signal)
    signal?.throwIfAborted()
    const booked = await this.reserve(key, rules, { cost: given.cost, maxWaitMs: given.maxWaitMs })
    if (!booked.allowed) return booked
    // A degraded booking (the local fallback's, in memory) is not the store's to give back.
    const giveBack = () => (booked.degraded ? Promise.resolve() : this.#giveBack(key, rules, given.cost))
    // Aborted while the booking was made, even one for now: given back.
    if (signal?.aborted) {
      await giveBack()
      throw signal.reason
    }
    if (booked.retryAfterMs <= 0) return booked
    // Whole ms: a timer of 100.6 ms may fire at 100, before the slot.
    const slot = performance.now() + Math.ceil(booked.retryAfterMs)
    await new Promise((resolve, reject) => {
      let timer
      // Node fires a timer of more than 2^31 - 1 ms (24.8 days) after 1 ms: a longer wait is slept
      // in steps.
      const sleep = () => {
        const left = slot - performance.now()
        if (left <= 0) {
          stopWatching()
          resolve()
          return
        }
        timer = setTimeout(sleep, Math.min(Math.ceil(left), LONGEST_TIMER_MS))
      }
      let stopWatching = () => {}
      const cancel = () => {
        clearTimeout(timer)
        giveBack().then(() => reject(signal.reason))
      }
      if (signal !== undefined) stopWatching = onAbort(signal, cancel)
      sleep()
    })
    return booked
  }

  /**
   * Gives an abandoned wait's booking back. The abort's reason is what the wait rejects with whatever
   * happens here: a refund that fails is only warned of (the booking stays spent).
   */
  async #giveBack(key, rules, cost) {
    try {
      await this.refund(key, rules, { cost })
    } catch (error) {
      process.emitWarning(`the abandoned wait's booking was not given back (${error.name}: ${error.message})`, { code: 'RATELOCK_REFUND_FAILED' })
    }
  }

  /**
   * Gives `key` other limits for its rules of the same windows (a tenant's plan), kept in the store
   * and read in the same call as every decision, so it applies on the next request in every process
   * and language: each rule of a later call takes the limit and burst of the first of `rules` with its
   * algorithm and period, and keeps its state. For `options.ttlMs`, or until `clearOverride`.
   * `options.nowMs` is the memory store's clock, when given.
   */
  async setOverride(key, rules, options) {
    check.key('key', key)
    check.rules(rules)
    let ttlMs, nowMs
    if (options !== undefined) {
      const given = check.options('options', options, ['ttlMs', 'nowMs'])
      ttlMs = check.optionalNumber('ttlMs', given.ttlMs)
      nowMs = check.optionalNumber('nowMs', given.nowMs)
    }
    const [limiter, parsed] = await this.#connectedWith(rules)
    await limiter.changeOverride(key, parsed.rules, ttlMs, nowMs).catch(rethrow)
  }

  /** Takes `key`'s override away; resolves to true when it had one. */
  async clearOverride(key) {
    check.key('key', key)
    const limiter = this.#native ?? (await this.#connection.get())
    return limiter.changeOverride(key, undefined, undefined, undefined).catch(rethrow)
  }

  /**
   * Bans `key` for `durationMs` (1 ms to 366 days): every hit and peek is denied with `reason: 'ban'`,
   * in every process and language sharing the store. A rule's `block` word starts the same ban when
   * the rule denies a hit. `options.nowMs` replaces the clock, as for `hit`.
   */
  async block(key, durationMs, options) {
    await this.#changeEntry('block', key, durationMs, options)
  }

  /** Lifts `key`'s ban; resolves to true when it had one (a list entry stays). */
  unblock(key, options) {
    return this.#changeEntry('unblock', key, undefined, options)
  }

  /** Puts `key` on this prefix's deny list for `ttlMs`: every hit and peek is denied with `reason: 'deny_list'`. */
  async deny(key, ttlMs, options) {
    await this.#changeEntry('deny', key, ttlMs, options)
  }

  /** Puts `key` on this prefix's allow list for `ttlMs`: every hit and peek passes with `reason: 'allow_list'`, spending nothing. */
  async allow(key, ttlMs, options) {
    await this.#changeEntry('allow', key, ttlMs, options)
  }

  /** Takes `key` off the deny or allow list; resolves to true when it was on one (a ban stays). */
  clear(key, options) {
    return this.#changeEntry('clear', key, undefined, options)
  }

  /** The native limiter, connected, and `rules` prepared by it (a bad rule text rejects, typed). */
  async #connectedWith(rules) {
    const limiter = this.#native ?? (await this.#connection.get())
    try {
      return [limiter, this.#parsed(rules)]
    } catch (error) {
      throw fromNative(error)
    }
  }

  async #changeEntry(op, key, spanMs, options) {
    check.key('key', key)
    if (spanMs !== undefined) check.optionalNumber(op === 'block' ? 'durationMs' : 'ttlMs', spanMs)
    const nowMs = options === undefined ? undefined : check.optionalNumber('nowMs', check.options('options', options, ['nowMs']).nowMs)
    const limiter = this.#native ?? (await this.#connection.get())
    return limiter.changeEntry(op, key, spanMs, nowMs).catch(rethrow)
  }

  /** The algorithm of rules that name none. */
  get defaultAlgorithm() {
    return this.#settings.defaultAlgorithm ?? 'gcra'
  }

  /** The key prefix. */
  get prefix() {
    return this.#settings.store.prefix ?? 'rl'
  }

  #check(spend, key, rules, options) {
    const limiter = this.#native
    if (limiter === null) {
      return this.#connection.get().then(() => this.#check(spend, key, rules, options))
    }
    let cost, nowMs, parsed
    try {
      ;({ cost, nowMs, parsed } = this.#arguments(key, rules, options))
      if (this.#memory !== null) {
        checkInMemory(this.#memory, key, parsed.rules, cost, nowMs, spend)
        return Promise.resolve(decision(this.#out, 0, parsed))
      }
      if (this.#wire !== null) return this.#wire.call(key, parsed, cost, nowMs, spend)
    } catch (error) {
      return Promise.reject(fromNative(error))
    }
    const id = this.#nextId
    this.#nextId = (id + 1) & 0x7fffffff
    const answer = new Promise((resolve, reject) => this.#waiting.set(id, { resolve, reject, parsed }))
    try {
      limiter.submit(key, parsed.rules, cost, nowMs, spend, id)
    } catch (error) {
      this.#waiting.delete(id)
      return Promise.reject(fromNative(error))
    }
    if (!this.#draining) this.#drain(limiter).catch((error) => this.#failWaiting(error))
    return answer
  }

  /** The checked arguments of a hit or a peek: its cost, its clock and the parsed rules. */
  #arguments(key, rules, options) {
    check.key('key', key)
    check.rules(rules)
    const { cost, nowMs } = costAndClock(options)
    return { cost, nowMs, parsed: this.#parsed(rules) }
  }

  /** A synchronous check (`hitSync`, `peekSync`) on the memory store; throws typed errors. */
  #checkNow(method, spend, key, rules, options) {
    try {
      if (this.#native === null) this.#openNow(method)
      if (this.#memory === null) throw notInMemory(method)
      const { cost, nowMs, parsed } = this.#arguments(key, rules, options)
      checkInMemory(this.#memory, key, parsed.rules, cost, nowMs, spend)
      return decision(this.#out, 0, parsed)
    } catch (error) {
      throw fromNative(error)
    }
  }

  /** The native limiter, opened now (without I/O) for a synchronous call: only on the memory store. */
  #openNow(method) {
    const opened = native.openLimiterNow(this.#settings)
    if (!opened.isLocal) throw notInMemory(method)
    return this.#opened(this.#connection.adopt(opened))
  }

  /** Resolves the waiting calls batch by batch while any is waiting. */
  async #drain(limiter) {
    this.#draining = true
    try {
      while (this.#waiting.size > 0) {
        const { answers, failed, failures } = await limiter.nextBatch()
        for (let at = 0; at < answers.length; at += 1 + FIELDS) {
          const waiting = this.#take(answers[at])
          if (waiting) waiting.resolve(decision(answers, at + 1, waiting.parsed))
        }
        for (let i = 0; i < failed.length; i++) {
          const waiting = this.#take(failed[i])
          if (waiting) waiting.reject(fromCode(failures[i].code, failures[i].message))
        }
      }
    } finally {
      this.#draining = false
    }
  }

  /** The batch reader failed (a bug, or the addon could not answer): every waiting call learns it,
   * none is left pending for good, and no rejection goes unhandled. */
  #failWaiting(error) {
    const failure = fromNative(error)
    for (const waiting of this.#waiting.values()) waiting.reject(failure)
    this.#waiting.clear()
  }

  #take(id) {
    const waiting = this.#waiting.get(id)
    this.#waiting.delete(id)
    return waiting
  }

  #parsed(rules) {
    let parsed = this.#rules.get(rules)
    if (parsed === undefined) {
      if (this.#rules.size >= RULES_CACHE_LIMIT) this.#rules.clear()
      parsed = this.#native.prepareRules(rules)
      this.#rules.set(rules, parsed)
    }
    return parsed
  }

  /** Sets up calls on the native limiter once it is open (the wire client, unless in memory). */
  #opened(limiter) {
    if (limiter.isLocal) {
      this.#memory = native.memoryChecker(limiter, this.#out)
    } else {
      const { url, timeoutMs } = this.#settings.store
      this.#wire = WireClient.open(limiter, url, timeoutMs ?? DEFAULT_TIMEOUT_MS)
    }
    this.#native = limiter
    return limiter
  }
}

/** The `cost` and `nowMs` of a call's options (`undefined` when not given), type-checked. */
function costAndClock(options) {
  if (options === undefined) return { cost: undefined, nowMs: undefined }
  const given = check.options('options', options, ['cost', 'nowMs'])
  return { cost: check.optionalNumber('cost', given.cost), nowMs: check.optionalNumber('nowMs', given.nowMs) }
}

/** The error of a synchronous call on a store that does I/O. */
function notInMemory(method) {
  return new ConfigurationError(`${method} answers only on the memory store (a limiter with no url): use ${method.replace('Sync', '')}`)
}

module.exports = { Limiter, LIMITER_OPTION_NAMES }
