'use strict'
// `Limiter`: every rule of a key checked in one round trip, all or nothing. Connects on first use;
// Redis calls run on the addon's runtime, memory-store calls answer at once.

const native = require('./native')
const check = require('./arguments')
const { fromNative, rethrow } = require('./errors')

class Limiter {
  #settings
  #native = null
  #local = false
  #connecting = null

  /**
   * @param {object} [options] `url` (none: the embedded memory store), `prefix`, `onError`
   *   ('raise' | 'allow' | 'deny'), `timeoutMs`, `defaultAlgorithm`, `clock` ('store' | 'local').
   */
  constructor(options) {
    const given = check.options('options', options)
    this.#settings = {
      url: check.optionalString('url', given.url),
      prefix: check.optionalString('prefix', given.prefix),
      onError: check.optionalString('onError', given.onError),
      timeoutMs: check.optionalNumber('timeoutMs', given.timeoutMs),
      defaultAlgorithm: check.optionalString('defaultAlgorithm', given.defaultAlgorithm),
      clock: check.optionalString('clock', given.clock),
    }
  }

  /** Connects now (otherwise the first call does); resolves to this limiter. */
  async connect() {
    await this.#connected()
    return this
  }

  /** Takes `cost` units from every rule for `key` if all allow it; otherwise takes nothing. */
  hit(key, rules, options) {
    return this.#check(true, key, rules, options)
  }

  /** Answers what `hit` would answer, without spending anything. */
  peek(key, rules, options) {
    return this.#check(false, key, rules, options)
  }

  /** Forgets the state of every given rule for `key`. */
  async reset(key, rules) {
    check.key('key', key)
    check.rules(rules)
    const limiter = this.#native ?? (await this.#connected())
    return limiter.reset(key, rules).catch(rethrow)
  }

  /** The key prefix. */
  get prefix() {
    return this.#settings.prefix ?? 'rl'
  }

  #check(spend, key, rules, options) {
    let cost, nowMs
    try {
      check.key('key', key)
      check.rules(rules)
      if (options !== undefined) {
        const given = check.options('options', options)
        cost = check.optionalNumber('cost', given.cost)
        nowMs = check.optionalNumber('nowMs', given.nowMs)
      }
    } catch (error) {
      return Promise.reject(error)
    }
    const limiter = this.#native
    if (limiter === null) {
      return this.#connected().then(() => this.#check(spend, key, rules, options))
    }
    if (this.#local) {
      try {
        return Promise.resolve(
          spend ? limiter.hitLocal(key, rules, cost, nowMs) : limiter.peekLocal(key, rules, cost, nowMs),
        )
      } catch (error) {
        return Promise.reject(fromNative(error))
      }
    }
    return (spend ? limiter.hit(key, rules, cost, nowMs) : limiter.peek(key, rules, cost, nowMs)).catch(rethrow)
  }

  #connected() {
    this.#connecting ??= native.connectLimiter(this.#settings).then(
      (limiter) => {
        this.#native = limiter
        this.#local = limiter.isLocal
        return limiter
      },
      (error) => {
        this.#connecting = null
        throw fromNative(error)
      },
    )
    return this.#connecting
  }
}

module.exports = { Limiter }
