'use strict'
// Type checks of JavaScript arguments before they reach the addon, so a wrong type gets the same
// named `InvalidArgumentError` as a wrong value (the addon checks values).

const { invalidArgument } = require('./errors')
const native = require('./native')

/** How many characters of a value an error message quotes (as the addon does). */
const EXCERPT_CHARS = 64

/** `text` itself when short; else its first `EXCERPT_CHARS` characters, an ellipsis and its length. */
function excerpt(text) {
  // A character is at most two UTF-16 units, so this slice holds the characters quoted and one more.
  const head = Array.from(text.slice(0, 2 * EXCERPT_CHARS + 2))
  if (head.length <= EXCERPT_CHARS) return text
  return `${head.slice(0, EXCERPT_CHARS).join('')}… (${Buffer.byteLength(text)} bytes)`
}

function describe(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object') return `an object (${excerpt(String(value.constructor?.name ?? 'Object'))})`
  return `${typeof value} ${excerpt(String(value))}`
}

/** A UTF-16 unit of a surrogate pair with no partner (with `u`, a whole pair is one code point outside
 * this range): UTF-8 cannot encode it. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u

/** `String.prototype.isWellFormed` (Node 20: several times cheaper than the pattern); none on Node 18. */
const isWellFormed = /** @type {{ isWellFormed?: (this: string) => boolean }} */ (String.prototype).isWellFormed

/** Whether `text` holds a lone surrogate. */
const hasLoneSurrogate =
  isWellFormed === undefined
    ? (/** @type {string} */ text) => LONE_SURROGATE.test(text)
    : (/** @type {string} */ text) => !isWellFormed.call(text)

/**
 * A key or name: a string or a Buffer. A string holding a lone surrogate is refused: converting it to
 * UTF-8 would replace the surrogate with U+FFFD, so different keys would share one bucket.
 */
function key(name, value) {
  if (typeof value === 'string') {
    if (hasLoneSurrogate(value)) {
      throw invalidArgument(
        name,
        'not valid Unicode text (it holds a lone surrogate); pass a Buffer for a key that is not text',
      )
    }
    return value
  }
  if (!Buffer.isBuffer(value)) {
    throw invalidArgument(name, `expected a string or a Buffer, got ${describe(value)}`)
  }
  return value
}

/** Rule text. */
function rules(value) {
  if (typeof value !== 'string') {
    throw invalidArgument('rules', `expected rule text such as "10/second; 1000/hour", got ${describe(value)}`)
  }
  return value
}

/** An optional number (`undefined`/`null`: absent). */
function optionalNumber(name, value) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number') throw notANumber(name, value)
  return value
}

/** The error for a required number of the wrong type. */
function notANumber(name, value) {
  return invalidArgument(name, `expected a number, got ${describe(value)}`)
}

/** An optional boolean. */
function optionalBoolean(name, value) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'boolean') throw invalidArgument(name, `expected a boolean, got ${describe(value)}`)
  return value
}

/** An optional `AbortSignal`. */
function optionalSignal(name, value) {
  if (value === undefined || value === null) return undefined
  if (!(value instanceof AbortSignal)) throw invalidArgument(name, `expected an AbortSignal, got ${describe(value)}`)
  return value
}

/** An optional string. */
function optionalString(name, value) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw invalidArgument(name, `expected a string, got ${describe(value)}`)
  return value
}

/**
 * Where measurements go (`undefined`: nowhere): a `Metrics` of `ratelock/otel` (an object with a
 * `record(name, value, attributes)` method) or such a function, as the addon calls it.
 */
function optionalMetrics(name, value) {
  if (value === undefined || value === null) return undefined
  let record
  if (typeof value === 'function') record = value
  else if (typeof value === 'object' && typeof value.record === 'function') {
    record = (instrument, measured, attributes) => value.record(instrument, measured, attributes)
  } else {
    throw invalidArgument(name, `expected a Metrics of ratelock/otel (or a record function), got ${describe(value)}`)
  }
  // A recorder that throws is warned of, at most once a second with the count since: thrown from
  // here it was the process's uncaughtException, and one broken exporter stopped the service.
  let failed = 0
  let warnedAt = -Infinity
  // The addon says how many measurements it dropped while its queue to this thread was full.
  return (instrument, measured, attributes, dropped) => {
    if (dropped > 0) {
      process.emitWarning(`${dropped} measurements were dropped: ${native.MAX_QUEUED_MEASUREMENTS} already waited for this thread`,
        { code: 'RATELOCK_METRICS_DROPPED' })
    }
    try {
      record(instrument, measured, attributes)
    } catch (error) {
      failed += 1
      const now = performance.now()
      if (now - warnedAt < 1000) return
      const times = failed > 1 ? ` (${failed} measurements since the last warning)` : ''
      process.emitWarning(`recording ${instrument} failed${times}: ${error?.name ?? 'Error'}: ${error?.message ?? String(error)}`,
        { code: 'RATELOCK_METRICS_FAILED' })
      warnedAt = now
      failed = 0
    }
  }
}

/** A function. */
function fn(name, value) {
  if (typeof value !== 'function') throw invalidArgument(name, `expected a function, got ${describe(value)}`)
  return value
}

/**
 * An options object (`undefined`: empty) whose fields are among `known`: any other field given a value
 * is an invalid argument naming it, since a misspelt option (`timeout` for `timeoutMs`) would otherwise
 * fall back to its default without a word.
 * A peer's option (express-rate-limit's `windowMs`) names what takes its place (`hints`).
 * @param {string} name
 * @param {unknown} value
 * @param {readonly string[]} known
 * @param {Readonly<Record<string, string>>} [hints] what to write instead of a peer's option, by its name
 * @returns {Record<string, any>}
 */
function options(name, value, known, hints = {}) {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw invalidArgument(name, `expected an options object, got ${describe(value)}`)
  }
  for (const [field, given] of Object.entries(value)) {
    if (given !== undefined && !known.includes(field)) {
      const instead = Object.hasOwn(hints, field) ? `; ${hints[field]}` : ''
      throw invalidArgument(name, `has no option ${JSON.stringify(field)}${instead} (the options here: ${known.join(', ')})`)
    }
  }
  return value
}

/**
 * The fields of an options object (`undefined`: empty), each type-checked by its checker in `checks`
 * (`{ url: optionalString, ... }`); a field not named there is an invalid argument.
 */
function settings(name, value, checks) {
  const given = options(name, value, Object.keys(checks))
  return Object.fromEntries(Object.entries(checks).map(([field, checkField]) => [field, checkField(field, given[field])]))
}

/** PEM text: a string or a Buffer (`undefined` when not given). */
function optionalPem(name, value) {
  if (value === undefined || typeof value === 'string' || Buffer.isBuffer(value)) return value
  throw invalidArgument(name, `expected PEM text (a string or a Buffer), got ${describe(value)}`)
}

/** Where a limiter's or a lock's keys live: the options every kind takes, with their type checks. */
const STORE_OPTIONS = {
  url: optionalString,
  prefix: optionalString,
  timeoutMs: optionalNumber,
  tlsRootCa: optionalPem,
  tlsClientCert: optionalPem,
  tlsClientKey: optionalPem,
  sentinelUsername: optionalString,
  sentinelPassword: optionalString,
  maxKeys: optionalNumber,
  whenFull: optionalString,
}

/**
 * The options of a kind (`STORE_OPTIONS` and the kind's own `checks`), type-checked, with the store's
 * under `store` as the addon takes them.
 * @returns {{ store: { url?: string, prefix?: string, timeoutMs?: number, tlsRootCa?: string | Buffer,
 *   tlsClientCert?: string | Buffer, tlsClientKey?: string | Buffer, sentinelUsername?: string,
 *   sentinelPassword?: string, maxKeys?: number, whenFull?: string } }
 *   & Record<string, any>}
 */
function kindSettings(name, value, checks) {
  const { url, prefix, timeoutMs, tlsRootCa, tlsClientCert, tlsClientKey, sentinelUsername, sentinelPassword,
    maxKeys, whenFull, ...own } = settings(name, value, { ...STORE_OPTIONS, ...checks })
  const store = { url, prefix, timeoutMs, tlsRootCa, tlsClientCert, tlsClientKey, sentinelUsername,
    sentinelPassword, maxKeys, whenFull }
  return { store, ...own }
}

module.exports = {
  key,
  rules,
  fn,
  notANumber,
  optionalNumber,
  optionalBoolean,
  optionalSignal,
  optionalString,
  optionalMetrics,
  options,
  settings,
  kindSettings,
  STORE_OPTIONS,
}
