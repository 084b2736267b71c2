'use strict'
// `ReadWriteLock`: many readers or one writer across every process on the same store and name, with
// writer preference by default. Each read or write acquire resolves to its own `LeaseGuard`.

const native = require('./native')
const check = require('./arguments')
const { using } = require('./guard')
const { LeaseGuard } = require('./lease-guard')
const { LockHandle, LOCK_OPTIONS } = require('./lock-handle')

class ReadWriteLock {
  #handle

  /**
   * @param {string | Buffer} name
   * @param {object} [options] `url` (none: the embedded memory store), `ttlMs` (each hold's lease,
   *   30000), `waiterTtlMs` (how long a dead waiting writer can hold back readers, 5000),
   *   `preferWriters` (a waiting writer holds back new readers, true), `autoRenew` (true), `prefix`,
   *   `timeoutMs` (each store call, 1000),
   *   and the store options `tlsRootCa`, `tlsClientCert`, `tlsClientKey`, `sentinelUsername`,
   *   `sentinelPassword`, `maxKeys`, `whenFull` (see
   *   `Limiter`).
   */
  constructor(name, options) {
    check.key('name', name)
    const checks = { ...LOCK_OPTIONS, waiterTtlMs: check.optionalNumber, preferWriters: check.optionalBoolean }
    const connect = (settings) => native.connectReadWriteLock(name, settings)
    this.#handle = new LockHandle(options, checks, connect, LeaseGuard)
  }

  /**
   * A read hold if no writer holds (or, with writer preference, waits for) the lock.
   * @returns {Promise<LeaseGuard | null>}
   */
  async tryAcquireRead() {
    return this.#handle.tryAcquire('tryAcquireRead')
  }

  /**
   * Waits up to `timeoutMs` (none: no limit) for a read hold; rejects with `WaitTimeoutError`.
   * @param {{ timeoutMs?: number }} [options]
   * @returns {Promise<LeaseGuard>}
   */
  async acquireRead(options) {
    return this.#handle.acquire('acquireRead', options)
  }

  /**
   * The write hold if nobody holds the lock (never marks itself waiting).
   * @returns {Promise<LeaseGuard | null>}
   */
  async tryAcquireWrite() {
    return this.#handle.tryAcquire('tryAcquireWrite')
  }

  /**
   * Waits up to `timeoutMs` (none: no limit) for the write hold; rejects with `WaitTimeoutError`. With
   * writer preference, new readers are held back while it waits.
   * @param {{ timeoutMs?: number }} [options]
   * @returns {Promise<LeaseGuard>}
   */
  async acquireWrite(options) {
    return this.#handle.acquire('acquireWrite', options)
  }

  /**
   * The lock as it stands: `readers`, `writer`, `writerFence`, `writerRemainingMs`, `waitingWriters`,
   * `lastFence`.
   * @returns {Promise<{ readers: number, writer: boolean, writerFence: number, writerRemainingMs: number, waitingWriters: number, lastFence: number }>}
   */
  async state() {
    return this.#handle.call('state')
  }

  /**
   * Takes a read hold (waiting up to `timeoutMs`), runs `work(signal)` and releases, even if `work`
   * throws. `signal` aborts with a `LockLostError` as soon as the hold is known lost.
   * @template T
   * @param {(signal: AbortSignal) => Promise<T> | T} work
   * @param {{ timeoutMs?: number }} [options]
   * @returns {Promise<T>}
   */
  async usingRead(work, options) {
    return using(work, () => this.acquireRead(options))
  }

  /**
   * Takes the write hold (waiting up to `timeoutMs`), runs `work(signal)` and releases, even if `work`
   * throws. `signal` aborts with a `LockLostError` as soon as the hold is known lost.
   * @template T
   * @param {(signal: AbortSignal) => Promise<T> | T} work
   * @param {{ timeoutMs?: number }} [options]
   * @returns {Promise<T>}
   */
  async usingWrite(work, options) {
    return using(work, () => this.acquireWrite(options))
  }
}

module.exports = { ReadWriteLock }
