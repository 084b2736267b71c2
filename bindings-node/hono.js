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
 *   function of `c`), `handler(c, next, { answer, decision, message, statusCode })` for refusals
 *   (hono-rate-limiter's name: the response it returns is sent; the refusal's status and headers are set
 *   on `c` first, and a response it builds itself gets the headers it lacks), `requestPropertyName` (the decision goes to `c.set(...)`, default
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
    throw invalidArgument('handler', 'expected a function of (c, next, { answer, decision, message, statusCode })')
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
        // As hono-rate-limiter sets them: `c.text(...)` answers with the refusal's status and headers.
        const pairs = [...headerPairs(answer)]
        for (const [name, value] of pairs) c.header(name, value)
        c.status(answer.status)
        const response = await handler(c, next, { answer, decision, message, statusCode: answer.status })
        // A response the handler built itself (`new Response(...)`) gets the headers it did not set.
        return response instanceof Response ? withHeaders(response, pairs, false) : response
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
    c.res = withHeaders(c.res, [...headerPairs(answer)], true)
  }
}

/**
 * `response` with the headers `pairs` (each one it already has replaced when `replace`, else kept). A
 * response whose headers cannot change (`Response.redirect`, one passed on from `fetch`) is copied:
 * setting them threw, and the client got a 500 for an allowed request.
 */
function withHeaders(response, pairs, replace) {
  const missing = replace ? pairs : pairs.filter(([name]) => !response.headers.has(name))
  try {
    for (const [name, value] of missing) response.headers.set(name, value)
    return response
  } catch (error) {
    if (!(error instanceof TypeError)) throw error
    const copy = new Response(response.body, response)
    for (const [name, value] of missing) copy.headers.set(name, value)
    return copy
  }
}

module.exports = { rateLimit }
