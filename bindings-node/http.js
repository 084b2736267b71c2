'use strict'
// `ratelock/http`: the adapter core itself (lib/http.js), for a framework ratelock has no adapter for.

const { HttpLimiter, headerPairs, scopedKey } = require('./lib/http')

module.exports = { HttpLimiter, headerPairs, scopedKey }
