'use strict'
// `Semaphore`: at most `permits` holders at once across every process on the same store and name.
// Each `acquire()` resolves to its own `PermitGuard` (a lease, renewed while held).

const native = require('./native')
const check = require('./arguments')
const { Guard, using } = require('./guard')
const { LockHandle, LOCK_OPTIONS } = require('./lock-handle')

/** One permit of a `Semaphore`: `lost`, `extend()` and `release()` of a `Guard`. */
class PermitGuard extends Guard {}

class Semaphore {
  #handle

  /**
   * @param {string | Buffer} name
   * @param {number} permits how many holders at once
   * @param {object} [options] `url` (none: the embedded memory store), `ttlMs` (30000), `autoRenew`
   *   (true), `prefix`, `timeoutMs` (each store call, 1000),
   *   and the store options `tlsRootCa`, `tlsClientCert`, `tlsClientKey`, `sentinelUsername`,
   *   `sentinelPassword`, `maxKeys`, `whenFull` (see
   *   `Limiter`).
   */
  constructor(name, permits, options) {
    check.key('name', name)
    if (typeof permits !== 'number') throw check.notANumber('permits', permits)
    const connect = (settings) => native.connectSemaphore(name, permits, settings)
    this.#handle = new LockHandle(options, LOCK_OPTIONS, connect, PermitGuard)
  }

  /** Takes a permit if one is free; resolves to it, or `null`. */
  async tryAcquire() {
    return this.#handle.tryAcquire('tryAcquire')
  }

  /** Waits up to `timeoutMs` (none: no limit) for a permit; rejects with `WaitTimeoutError`. */
  async acquire(options) {
    return this.#handle.acquire('acquire', options)
  }

  /** Permits in use now. */
  async inUse() {
    return this.#handle.call('inUse')
  }

  /**
   * Takes a permit (waiting up to `timeoutMs`), runs `work(signal)` and gives the permit back, even if
   * `work` throws; `signal` aborts with a `LockLostError` if the permit is lost meanwhile.
   */
  async using(work, options) {
    return using(work, () => this.acquire(options))
  }
}

module.exports = { Semaphore, PermitGuard }
