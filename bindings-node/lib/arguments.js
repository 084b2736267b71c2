'use strict'
// Type checks of JavaScript arguments before they reach the addon, so a wrong type gets the same
// named `InvalidArgumentError` as a wrong value (the addon checks values).

const { invalidArgument } = require('./errors')

function describe(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'object' ? `an object (${value.constructor?.name ?? 'Object'})` : `${typeof value} ${String(value)}`
}

/** A key or name: a string or a Buffer. */
function key(name, value) {
  if (typeof value !== 'string' && !Buffer.isBuffer(value)) {
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

/** An optional string. */
function optionalString(name, value) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw invalidArgument(name, `expected a string, got ${describe(value)}`)
  return value
}

/** A function. */
function fn(name, value) {
  if (typeof value !== 'function') throw invalidArgument(name, `expected a function, got ${describe(value)}`)
  return value
}

/** An options object (`undefined`: empty). */
function options(name, value) {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw invalidArgument(name, `expected an options object, got ${describe(value)}`)
  }
  return value
}

module.exports = { key, rules, fn, notANumber, optionalNumber, optionalBoolean, optionalString, options }
