'use strict'
// Hono middleware on the adapter core (lib/http.js). On Node (`@hono/node-server`) the client address is
// the socket's; on other runtimes give `getPeer(c)` (e.g. from Hono's `getConnInfo`) or a `keyGenerator`.
//   app.use(require('ratelock/hono').rateLimit({ url: process.env.REDIS_URL, rules: '100/minute' }))

const { middlewareOf, headerPairs } = require('./lib/http')
const { invalidArgument } = require('./lib/errors')

/**
 * @param {object} [options] the `HttpLimiter` options (see `HttpLimiter`), or `http`; `rules` (text or a
 *   function of `c`; default '60/minute'), `scope`, `keyGenerator(c)`, `skip(c)`, `cost`, `getPeer(c)`
 *   (the connection's address; default: the Node socket's), `message` (a body of your own, or a
 *   function of `c`), `handler(c, next, { answer, decision, message })` for refusals (hono-rate-limiter's
 *   name: the response it returns is sent; the refusal's headers are set on `c` first, so `c.text`,
 *   `c.json` and `c.body` carry them), `requestPropertyName` (the decision goes to `c.set(...)`, default
 *   'rateLimit');
 *   `skipSuccessfulRequests`, `skipFailedRequests` and `requestWasSuccessful(c)` (which answered
 *   requests stay counted, as express-rate-limit and hono-rate-limiter name them).
 */
function rateLimit(options = {}) {
  const { http, limit } = middlewareOf(options, ['getPeer', 'handler', 'message', 'requestPropertyName'])
  if (options.getPeer !== undefined && typeof options.getPeer !== 'function') {
    throw invalidArgument('getPeer', 'expected a function of the context')
  }
  if (options.handler !== undefined && typeof options.handler !== 'function') {
    throw invalidArgument('handler', 'expected a function of (c, next, { answer, decision, message })')
  }
  const handler = options.handler
  const getPeer = options.getPeer ?? ((c) => c.env?.incoming?.socket?.remoteAddress ?? null)
  const property = options.requestPropertyName ?? 'rateLimit'
  const message = options.message

  return async function ratelockRateLimit(c, next) {
    const forwarded = http.proxyHeader === null ? null : (c.req.header(http.proxyHeader) ?? null)
    const { answer, decision, counted } = await http.check(limit, [c], getPeer(c), forwarded)
    if (answer === null) return next()
    if (decision !== null) c.set(property, decision)
    if (!answer.proceed) {
      if (handler !== undefined) {
        for (const [name, value] of headerPairs(answer)) c.header(name, value)
        return handler(c, next, { answer, decision, message })
      }
      const headers = Object.fromEntries(headerPairs(answer))
      if (message !== undefined) {
        const body = typeof message === 'function' ? await message(c) : message
        return typeof body === 'string' ? c.text(body, answer.status, headers) : c.json(body, answer.status, headers)
      }
      return c.body(answer.body, answer.status, { ...headers, 'Content-Type': answer.contentType })
    }
    try {
      await next()
    } catch (error) {
      http.settle(limit, counted, [c], null)
      throw error
    }
    // Hono has answered a handler's error by now (its onError's response, a 500 by default). The
    // response is made, not yet sent: Hono hands it to its runtime after the middleware returns.
    http.settle(limit, counted, [c], c.res.status)
    const pairs = [...headerPairs(answer)]
    try {
      for (const [name, value] of pairs) c.res.headers.set(name, value)
    } catch (error) {
      // A response whose headers cannot change (`Response.redirect`, one passed on from `fetch`): a
      // copy takes them. Setting them threw, and the client got a 500 for an allowed request.
      if (!(error instanceof TypeError)) throw error
      const copy = new Response(c.res.body, c.res)
      for (const [name, value] of pairs) copy.headers.set(name, value)
      c.res = copy
    }
  }
}

module.exports = { rateLimit }
