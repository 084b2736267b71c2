'use strict'
// `ratelock/otel`: OpenTelemetry metrics (lib/otel.js), through @opentelemetry/api.

const { Metrics } = require('./lib/otel')

module.exports = { Metrics }
