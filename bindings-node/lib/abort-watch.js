'use strict'
// `onAbort`: one listener per `AbortSignal`, however many waits share it. A request-scoped signal given
// to many concurrent acquires added a listener each, and past ten Node warned of a possible leak
// (`MaxListenersExceededWarning`) though each was removed when its wait ended.

/** @type {WeakMap<AbortSignal, Set<() => void>>} the callbacks waiting on each signal */
const waiting = new WeakMap()

/**
 * Calls `callback()` once when `signal` aborts, unless the returned function is called first.
 * @param {AbortSignal} signal
 * @param {() => void} callback
 * @returns {() => void} stops watching
 */
function onAbort(signal, callback) {
  let callbacks = waiting.get(signal)
  if (callbacks === undefined) {
    const mine = new Set()
    callbacks = mine
    waiting.set(signal, mine)
    signal.addEventListener('abort', () => {
      waiting.delete(signal)
      for (const call of mine) call()
    }, { once: true })
  }
  callbacks.add(callback)
  return () => callbacks.delete(callback)
}

module.exports = { onAbort }
