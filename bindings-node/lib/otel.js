'use strict'
// `Metrics`: ratelock's OpenTelemetry instruments on one meter (`@opentelemetry/api`), passed as a
// limiter's or a lock's `metrics` option. The Rust core's decision hook makes every measurement (the
// same names and attributes as in Rust and Python) and the addon queues each to `record` here, which
// only hands it to its instrument.

const fs = require('node:fs')
const path = require('node:path')
const check = require('./arguments')
const native = require('./native')

/** The package's version, the meter's. */
const VERSION = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')).version

/** An optional peer dependency: named by a constant, which the type check does not try to resolve. */
const API = '@opentelemetry/api'

/** The OpenTelemetry API, which ratelock leaves to the application to install. */
function openTelemetryApi() {
  try {
    return require(API)
  } catch (error) {
    throw new Error('ratelock/otel records through @opentelemetry/api: npm install @opentelemetry/api', {
      cause: error,
    })
  }
}

class Metrics {
  /** @type {Map<string, (value: number, attributes: Record<string, string>) => void>} */
  #record = new Map()

  /**
   * @param {object} [options] `meterProvider` (default: the global one, as set when this is made:
   *   make it after the SDK starts). The meter is named `ratelock`.
   */
  constructor(options) {
    const { meterProvider } = check.options('options', options, ['meterProvider'])
    const provider = meterProvider ?? openTelemetryApi().metrics.getMeterProvider()
    const meter = provider.getMeter('ratelock', VERSION)
    for (const { name, kind, unit, description, boundaries } of native.instruments()) {
      if (kind === 'histogram') {
        // The boundaries as the API's advice (@opentelemetry/api 1.7 and later; older ones ignore it):
        // the SDK's default ones were made for milliseconds, and put every round trip in one bucket.
        const histogram = meter.createHistogram(name, { unit, description, advice: { explicitBucketBoundaries: boundaries } })
        this.#record.set(name, (value, attributes) => histogram.record(value, attributes))
      } else {
        const counter = meter.createCounter(name, { unit, description })
        this.#record.set(name, (value, attributes) => counter.add(value, attributes))
      }
    }
  }

  /**
   * Records one measurement (the addon calls it, on the JavaScript thread).
   * @param {string} name
   * @param {number} value a count, or seconds
   * @param {Record<string, string>} attributes
   */
  record(name, value, attributes) {
    this.#record.get(name)(value, attributes)
  }
}

module.exports = { Metrics }
