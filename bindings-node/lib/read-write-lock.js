'use strict'
// `ReadWriteLock`: many readers or one writer across every process on the same store and name, with
// writer preference by default. Each read or write acquire resolves to its own `LeaseGuard`.

const native = require('./native')
const check = require('./arguments')
const { rethrow } = require('./errors')
const { Connection, whileHeld } = require('./holding')
const { LeaseGuard, leaseSettings, waitLimit } = require('./lease-guard')

const READ = 'read hold'
const WRITE = 'write hold'

class ReadWriteLock {
  #connection
  #ttlMs

  /**
   * @param {string | Buffer} name
   * @param {object} [options] `url` (none: the embedded memory store), `ttlMs` (each hold's lease,
   *   30000), `waiterTtlMs` (how long a dead waiting writer can hold back readers, 5000),
   *   `preferWriters` (a waiting writer holds back new readers, true), `autoRenew` (true), `prefix`,
   *   `timeoutMs` (each store call, 1000).
   */
  constructor(name, options) {
    check.key('name', name)
    const given = check.options('options', options)
    const settings = {
      ...leaseSettings(given),
      preferWriters: check.optionalBoolean('preferWriters', given.preferWriters),
    }
    this.#ttlMs = settings.ttlMs ?? 30_000
    this.#connection = new Connection(() => native.connectReadWriteLock(name, settings))
  }

  /**
   * A read hold if no writer holds (or, with writer preference, waits for) the lock.
   * @returns {Promise<LeaseGuard | null>}
   */
  async tryAcquireRead() {
    return this.#maybe(READ, await (await this.#connection.get()).tryAcquireRead().catch(rethrow))
  }

  /**
   * Waits up to `timeoutMs` (none: no limit) for a read hold; rejects with `WaitTimeoutError`.
   * @param {{ timeoutMs?: number }} [options]
   * @returns {Promise<LeaseGuard>}
   */
  async acquireRead(options) {
    const timeoutMs = waitLimit(options)
    const hold = await (await this.#connection.get()).acquireRead(timeoutMs).catch(rethrow)
    return new LeaseGuard(hold, READ, this.#ttlMs)
  }

  /**
   * The write hold if nobody holds the lock (never marks itself waiting).
   * @returns {Promise<LeaseGuard | null>}
   */
  async tryAcquireWrite() {
    return this.#maybe(WRITE, await (await this.#connection.get()).tryAcquireWrite().catch(rethrow))
  }

  /**
   * Waits up to `timeoutMs` (none: no limit) for the write hold; rejects with `WaitTimeoutError`. With
   * writer preference, new readers are held back while it waits.
   * @param {{ timeoutMs?: number }} [options]
   * @returns {Promise<LeaseGuard>}
   */
  async acquireWrite(options) {
    const timeoutMs = waitLimit(options)
    const hold = await (await this.#connection.get()).acquireWrite(timeoutMs).catch(rethrow)
    return new LeaseGuard(hold, WRITE, this.#ttlMs)
  }

  /**
   * The lock as it stands: `readers`, `writer`, `writerFence`, `writerRemainingMs`, `waitingWriters`,
   * `lastFence`.
   * @returns {Promise<{ readers: number, writer: boolean, writerFence: number, writerRemainingMs: number, waitingWriters: number, lastFence: number }>}
   */
  async state() {
    return (await this.#connection.get()).state().catch(rethrow)
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
    check.fn('work', work)
    const hold = await this.acquireRead(options)
    return whileHeld(READ, hold.hold, () => hold.release(), work)
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
    check.fn('work', work)
    const hold = await this.acquireWrite(options)
    return whileHeld(WRITE, hold.hold, () => hold.release(), work)
  }

  #maybe(what, hold) {
    return hold === null ? null : new LeaseGuard(hold, what, this.#ttlMs)
  }
}

module.exports = { ReadWriteLock }
