'use strict'
// `LockHandle`: what the handle of every lock kind (`DistributedLock`, `Semaphore`, `FairLock`,
// `ReadWriteLock`) does the same way over its native handle: type-checks the options it is made with,
// connects on first use, and takes holds (at once, or waiting up to `timeoutMs`), each resolving to
// the kind's hold class.

const check = require('./arguments')
const { Connection } = require('./connection')
const native = require('./native')
const { LockLostError, LockNotOwnedError } = require('./errors')
const { onAbort } = require('./abort-watch')

/** The options of every lock kind besides the store's, with their type checks (the addon checks the
 * values). */
const LOCK_OPTIONS = {
  ttlMs: check.optionalNumber,
  autoRenew: check.optionalBoolean,
  metrics: check.optionalMetrics,
}

class LockHandle {
  #connection
  #Grant

  /**
   * @param {unknown} options the options the lock was made with
   * @param {Record<string, (name: string, value: unknown) => unknown>} checks the kind's options, with
   *   their type checks (`LOCK_OPTIONS` and the kind's own; the store's are added)
   * @param {(settings: object) => Promise<any>} connect opens the native handle with the checked options
   * @param {new (native: object) => any} Grant the class of the kind's holds, made from a native guard
   */
  constructor(options, checks, connect, Grant) {
    const settings = check.kindSettings('options', options, checks)
    this.#connection = new Connection(() => connect(settings))
    this.#Grant = Grant
  }

  /** The native handle once connected (`null` before). */
  get native() {
    return this.#connection.native
  }

  /** Calls `method` of the native handle with `args` (connecting first); rejects with typed errors. */
  call(method, ...args) {
    return this.#connection.call(method, ...args)
  }

  /** A hold from the native `method` that never waits (e.g. `tryAcquire`), or `null`. */
  async tryAcquire(method) {
    const native = await this.#connection.call(method)
    return native === null ? null : new this.#Grant(native)
  }

  /**
   * A hold from the native `method` that waits up to `options.timeoutMs` (none: no limit), e.g.
   * `acquire`; rejects with `WaitTimeoutError` when the time passes. `options.signal` (an
   * `AbortSignal`) stops the wait: it rejects with the signal's reason, and nothing stays taken (a fair
   * lock's place is withdrawn, a hold granted meanwhile is given back, also one granted just before the
   * abort that the caller had not seen yet).
   * @param {string} method
   * @param {{ timeoutMs?: number, signal?: AbortSignal }} [options]
   */
  async acquire(method, options) {
    const given = check.options('options', options, ['timeoutMs', 'signal'])
    const timeoutMs = check.optionalNumber('timeoutMs', given.timeoutMs)
    const signal = check.optionalSignal('signal', given.signal)
    if (signal === undefined) return new this.#Grant(await this.#connection.call(method, timeoutMs))
    signal.throwIfAborted()
    const aborts = new native.NativeAbortSwitch()
    const stopWatching = onAbort(signal, () => aborts.abort())
    let hold
    try {
      hold = new this.#Grant(await this.#connection.call(method, timeoutMs, aborts))
    } catch (error) {
      // Whatever ended the wait once the signal aborted, the caller asked for the abort.
      if (signal.aborted) throw signal.reason
      throw error
    } finally {
      stopWatching()
    }
    // Granted, but the signal aborted before the caller could see it: given back, as a wait the abort
    // stopped gives back what the store granted meanwhile.
    if (signal.aborted) {
      await hold.release().catch((error) => {
        // Lost or gone meanwhile: nothing is held, so nothing is left to give back.
        if (error instanceof LockLostError || error instanceof LockNotOwnedError) return
        process.emitWarning(`the hold granted as its wait was aborted was not given back (${error.name}: ${error.message})`, {
          code: 'RATELOCK_RELEASE_FAILED',
        })
      })
      throw signal.reason
    }
    return hold
  }
}

module.exports = { LockHandle, LOCK_OPTIONS }
