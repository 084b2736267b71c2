'use strict'
// A Fastify plugin on the adapter core (lib/http.js), with @fastify/rate-limit's option names where they
// mean the same. Limits every route (`global`, default true) and per route through
// `config: { rateLimit: { rules, ... } }` (or `rateLimit: false`):
//   await fastify.register(require('ratelock/fastify'), { url: process.env.REDIS_URL, rules: '100/minute' })
// Its `onExceeding` and `onExceeded` tell the app of each counted request, as @fastify/rate-limit's do.

const { httpLimiterOf, headerPairs, peerOf, forwardedOf, settleWhenSent } = require('./lib/http')
const { invalidArgument } = require('./lib/errors')

/**
 * @param {object} fastify the instance registering the plugin.
 * @param {object} options the `HttpLimiter` options (see `HttpLimiter`), or `http`; `rules` (text or a
 *   function of `(request, reply)`; default '60/minute'), `keyGenerator(request, reply)`, `skip`,
 *   `allowList` (keys, or a function of `(request, key)`, let through uncounted), `cost`, `global`
 *   (limit every route, default true), `hook` ('onRequest' or 'preHandler', default 'onRequest'),
 *   `errorResponseBuilder(request, context)` (a body of your own), `requestPropertyName` ('rateLimit');
 *   `onExceeding(request, key)` and `onExceeded(request, key)`, told of each request the limit let through
 *   or refused (not of one skipped, allow-listed or answered through an outage);
 *   `skipSuccessfulRequests`, `skipFailedRequests` and `requestWasSuccessful(request, reply)` (which
 *   answered requests stay counted, as express-rate-limit names them).
 */
async function ratelockFastify(fastify, options = {}) {
  // `logLevel` and `logSerializers` are Fastify's own options for any plugin it registers.
  const own = [
    'allowList', 'global', 'hook', 'errorResponseBuilder', 'requestPropertyName', 'onExceeding', 'onExceeded', 'logLevel',
    'logSerializers',
  ]
  const http = httpLimiterOf(options, own)
  const told = { onExceeding: callbackOf(options, 'onExceeding'), onExceeded: callbackOf(options, 'onExceeded') }
  const allowList = options.allowList
  if (allowList !== undefined && !Array.isArray(allowList) && typeof allowList !== 'function') {
    throw invalidArgument('allowList', 'expected an array of keys or a function of (request, key)')
  }
  /** The skip of a limit counted on `keyGenerator`: the one given, else the allowList's on that key. */
  const skipFor = (keyGenerator) =>
    options.skip ?? (allowList === undefined ? undefined : allowListSkip(http, allowList, keyGenerator))
  const shared = {
    keyGenerator: options.keyGenerator,
    cost: options.cost,
    skip: skipFor(options.keyGenerator),
    skipSuccessfulRequests: options.skipSuccessfulRequests,
    skipFailedRequests: options.skipFailedRequests,
    requestWasSuccessful: options.requestWasSuccessful,
  }
  const global =
    options.global === false ? null : { limit: http.limit({ rules: options.rules ?? '60/minute', scope: options.scope, ...shared }), ...told }
  const hook = options.hook ?? 'onRequest'
  if (hook !== 'onRequest' && hook !== 'preHandler') throw invalidArgument('hook', "expected 'onRequest' or 'preHandler'")
  const property = options.requestPropertyName ?? 'rateLimit'
  const build = options.errorResponseBuilder
  /** Each route's own limit with the callbacks it tells, made once per route. */
  const routeLimits = new Map()

  fastify.addHook('onRoute', (route) => {
    const own = route.config?.rateLimit
    if (own === undefined || own === false || own === null) return
    if (typeof own !== 'object') throw invalidArgument('config.rateLimit', 'expected an object or false')
    // HEAD counts with GET (Fastify adds a HEAD route beside each GET one, answered by the GET handler).
    const methods = [...new Set([route.method].flat().map((method) => (method === 'HEAD' ? 'GET' : method)))].join(',')
    // A route's own keyGenerator is the key its allowList is matched on too.
    const skip = own.skip ?? (own.keyGenerator === undefined ? shared.skip : skipFor(own.keyGenerator))
    const { onExceeding, onExceeded, ...limitOptions } = own
    const limited = {
      limit: http.limit({ ...shared, ...limitOptions, skip, scope: own.scope ?? `${methods} ${route.url}` }),
      // A route's own callback replaces the plugin's; null turns it off there.
      onExceeding: onExceeding === undefined ? told.onExceeding : callbackOf(own, 'onExceeding', 'config.rateLimit.'),
      onExceeded: onExceeded === undefined ? told.onExceeded : callbackOf(own, 'onExceeded', 'config.rateLimit.'),
    }
    for (const method of [route.method].flat()) routeLimits.set(`${method} ${route.url}`, limited)
  })

  fastify.addHook(hook, async (request, reply) => {
    const own = request.routeOptions?.config?.rateLimit
    if (own === false) return
    const limited = routeLimits.get(`${request.method} ${request.routeOptions?.url}`) ?? global
    if (limited === null || limited === undefined) return
    const { limit } = limited
    const { answer, decision, counted, key } = await http.check(limit, [request, reply], peerOf(request.raw), forwardedOf(http, request.raw))
    if (answer === null) return
    settleWhenSent(http, limit, counted, [request, reply], reply.raw)
    if (decision !== null) {
      request[property] = decision
      // A degraded answer is the failure policy's, not the limit's: neither callback hears of it.
      const callback = decision.degraded ? undefined : answer.proceed ? limited.onExceeding : limited.onExceeded
      if (callback) await callback(request, key)
    }
    for (const [name, value] of headerPairs(answer)) reply.header(name, value)
    if (answer.proceed) return
    reply.code(answer.status)
    if (build !== undefined) {
      return reply.send(await build(request, { answer, decision, statusCode: answer.status }))
    }
    // A Buffer, so that Fastify sends the content type as given (it adds a charset to a string's).
    return reply.header('content-type', answer.contentType).send(Buffer.from(answer.body))
  })
}

/** The callback `options[name]`, checked: a function, or undefined (null: none) when not given. */
function callbackOf(options, name, path = '') {
  const callback = options[name]
  if (callback === null || callback === undefined) return undefined
  if (typeof callback !== 'function') throw invalidArgument(`${path}${name}`, 'expected a function of (request, key), or null')
  return callback
}

/**
 * A `skip` from @fastify/rate-limit's `allowList`: the request's key is listed (or the function says so).
 * The key is the one the limit counts on: the `keyGenerator`'s, else the client's address as the trusted
 * proxies say (Fastify's `request.ip` follows its own `trustProxy`: behind a proxy it named the proxy,
 * so an allowed proxy address let every client through, or trusted a header any client can send).
 */
function allowListSkip(http, allowList, keyGenerator) {
  const generate = keyGenerator ?? http.keyGenerator
  return async (request, reply) => {
    const key = generate ? await generate(request, reply) : http.clientKey(peerOf(request.raw), forwardedOf(http, request.raw))
    return typeof allowList === 'function' ? allowList(request, key) : allowList.includes(key)
  }
}

// What fastify-plugin would set: the hooks apply to the whole app, not an encapsulated child.
ratelockFastify[Symbol.for('skip-override')] = true
ratelockFastify[Symbol.for('fastify.display-name')] = 'ratelock'

module.exports = ratelockFastify
module.exports.default = ratelockFastify
module.exports.ratelockFastify = ratelockFastify
