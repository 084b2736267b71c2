'use strict'
// `Connection`: a native handle opened on first use (by a `Limiter` or a lock of any kind), opened again
// by a later call when opening failed, and the calls made on it with their errors typed.

const { fromNative, rethrow } = require('./errors')

/** Opens `open()` once; the promise is forgotten on failure so a later call tries again. */
class Connection {
  #open
  #native = null
  #connecting = null

  /** @param {() => Promise<any>} open opens the native handle */
  constructor(open) {
    this.#open = open
  }

  /** The native handle once open (`null` before). */
  get native() {
    return this.#native
  }

  /** The native handle, opening it first if needed; rejects with the typed error of a failed open. */
  get() {
    if (this.#native !== null) return Promise.resolve(this.#native)
    this.#connecting ??= this.#open().then(
      (handle) => {
        this.#native = handle
        return handle
      },
      (error) => {
        this.#connecting = null
        throw fromNative(error)
      },
    )
    return this.#connecting
  }

  /** Takes `handle`, opened without waiting, as the native handle, unless one is open already; returns
   * the one in use. */
  adopt(handle) {
    this.#native ??= handle
    return this.#native
  }

  /** Calls `method` of the native handle with `args` (opening it first); rejects with typed errors. */
  async call(method, ...args) {
    return (await this.get())[method](...args).catch(rethrow)
  }
}

module.exports = { Connection }
