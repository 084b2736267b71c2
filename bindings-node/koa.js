'use strict'
// Koa middleware on the adapter core (lib/http.js):
//   app.use(require('ratelock/koa').rateLimit({ url: process.env.REDIS_URL, rules: '100/minute' }))

const { middlewareOf, headerPairs, peerOf, forwardedOf, settleWhenSent } = require('./lib/http')
const { invalidArgument } = require('./lib/errors')

/**
 * @param {object} [options] the `HttpLimiter` options (see `HttpLimiter`), or `http`; `rules` (text or a
 *   function of `ctx`; default '60/minute'), `scope`, `keyGenerator(ctx)`, `skip(ctx)`, `cost`,
 *   `message` (a body of your own, or a function of `ctx`), `throw` (koa-ratelimit's name: a limit's refusal is
 *   `ctx.throw(status, body, { headers })`, for the app's error middleware to answer; an outage or a bad
 *   key is answered as without it), `requestPropertyName`
 *   (the decision goes on `ctx.state`, default 'rateLimit'); `skipSuccessfulRequests`, `skipFailedRequests` and
 *   `requestWasSuccessful(ctx)` (which answered requests stay counted, as express-rate-limit names them).
 */
function rateLimit(options = {}) {
  const { http, limit } = middlewareOf(options, ['message', 'requestPropertyName', 'throw'])
  if (options.throw !== undefined && typeof options.throw !== 'boolean') throw invalidArgument('throw', 'expected true or false')
  const throwing = options.throw === true
  const property = options.requestPropertyName ?? 'rateLimit'
  const message = options.message

  return async function ratelockRateLimit(ctx, next) {
    const { answer, decision, counted } = await http.check(limit, [ctx], peerOf(ctx.req), forwardedOf(http, ctx.req))
    if (answer === null) return next()
    if (decision !== null) ctx.state[property] = decision
    for (const [name, value] of headerPairs(answer)) ctx.set(name, value)
    if (answer.proceed) {
      settleWhenSent(http, limit, counted, [ctx], ctx.res)
      return next()
    }
    // Only a limit's refusal is thrown, as koa-ratelimit throws only its own: an outage's 503 and a bad
    // key's 400 are answered here (a thrown 5xx would lose its body and be logged as the app's error).
    if (throwing && decision !== null) {
      const body = message === undefined ? answer.body : typeof message === 'function' ? await message(ctx) : message
      // Koa's error handling drops the headers set so far and sets the error's own; it sends the message
      // as text.
      const headers = Object.fromEntries(headerPairs(answer))
      ctx.throw(answer.status, typeof body === 'string' ? body : JSON.stringify(body), { headers, expose: true })
    }
    ctx.status = answer.status
    if (message !== undefined) {
      ctx.body = typeof message === 'function' ? await message(ctx) : message
      return
    }
    ctx.type = answer.contentType
    ctx.body = answer.body
  }
}

module.exports = { rateLimit }
