'use strict'
// Express (or any Connect-style) middleware with express-rate-limit's option names, on the adapter
// core (lib/http.js): one round trip per request decides, and the core renders every header and body.
//   app.use(require('ratelock/express').rateLimit({ url: process.env.REDIS_URL, rules: '100/minute' }))

const { middlewareOf, headerPairs, peerOf, forwardedOf, settleWhenSent } = require('./lib/http')
const { invalidArgument } = require('./lib/errors')

/**
 * @param {object} [options] the `HttpLimiter` options (`limiter` or `url`, `prefix`, `timeoutMs`,
 *   `onError`, `instances`; `standardHeaders`, `legacyHeaders`, `partitionKey`, `deniedBody`,
 *   `statusCode`; `ipv6Subnet`, `trustedProxies`, `proxyHeader`), or `http` (one to share); and
 *   `rules` (text or a function of `(req, res)`; default '60/minute'), `scope` (default 'default'),
 *   `keyGenerator(req, res)` (default: the client address), `skip(req, res)`, `cost` (number or
 *   function), `handler(req, res, next, options)` for refusals, `message` (a body of your own, or a
 *   function of `(req, res)`), `passOnStoreError` (= `onError: 'allow'`), `requestPropertyName`
 *   (where the decision goes on `req`, default 'rateLimit'); `skipSuccessfulRequests`,
 *   `skipFailedRequests` and `requestWasSuccessful(req, res)` (which answered requests stay counted).
 */
function rateLimit(options = {}) {
  const { http, limit } = middlewareOf(options, ['handler', 'message', 'requestPropertyName'])
  for (const name of ['handler']) {
    if (options[name] !== undefined && typeof options[name] !== 'function') throw invalidArgument(name, 'expected a function')
  }
  const handler = options.handler ?? sendRefusal
  const message = options.message
  const property = options.requestPropertyName ?? 'rateLimit'

  return async function ratelockRateLimit(req, res, next) {
    try {
      const { answer, decision, counted } = await http.check(limit, [req, res], peerOf(req), forwardedOf(http, req))
      if (answer === null) return next()
      if (decision !== null) req[property] = decision
      settleWhenSent(http, limit, counted, [req, res], res)
      for (const [name, value] of headerPairs(answer)) res.setHeader(name, value)
      if (answer.proceed) return next()
      return await handler(req, res, next, { answer, decision, message, statusCode: answer.status })
    } catch (error) {
      return next(error)
    }
  }
}

/** The default refusal: the core's status, content type and body (or `message`, when given). */
async function sendRefusal(req, res, _next, { answer, message }) {
  res.statusCode = answer.status
  if (message !== undefined) {
    const body = typeof message === 'function' ? await message(req, res) : message
    if (typeof body === 'string') {
      res.setHeader('Content-Type', 'text/plain; charset=utf-8')
      res.end(body)
    } else {
      res.setHeader('Content-Type', 'application/json')
      res.end(JSON.stringify(body))
    }
    return
  }
  res.setHeader('Content-Type', answer.contentType)
  res.end(answer.body)
}

module.exports = { rateLimit }
