'use strict'
// Express (or any Connect-style) middleware with express-rate-limit's option names, on ratelock's
// limiter: one round trip per request decides and yields every header. Usage:
//   app.use(require('ratelock/express').rateLimit({ url: process.env.REDIS_URL, rules: '100/minute' }))

const { Limiter } = require('./lib/limiter')
const { StoreUnavailableError, invalidArgument } = require('./lib/errors')
const headers = require('./lib/headers')

const DRAFTS = ['draft-6', 'draft-7', 'draft-8']

/**
 * @param {object} [options]
 *   `limiter` (a ratelock Limiter) or `url` (+ `prefix`, `timeoutMs`, `onError`, `instances`: see
 *   `Limiter`); `rules` (text, or a function of
 *   the request; default '60/minute'); `keyGenerator(req, res)` (default: `req.ip`); `skip(req, res)`;
 *   `cost` (number or function); `handler(req, res, next, options)` for rejections; `statusCode` (429);
 *   `message` (body, or a function of req/res); `standardHeaders` ('draft-6' | 'draft-7' | 'draft-8',
 *   true = 'draft-7', false = none; default 'draft-7'); `legacyHeaders` (X-RateLimit-*, default true);
 *   `passOnStoreError` (let requests through when the store is down, default false);
 *   `requestPropertyName` (where the decision goes on `req`, default 'rateLimit').
 */
function rateLimit(options = {}) {
  const settings = settingsOf(options)
  const { limiter, standard, legacyHeaders, passOnStoreError, requestPropertyName } = settings

  return async function ratelockRateLimit(req, res, next) {
    try {
      if (await settings.skip(req, res)) return next()
      const key = await settings.keyGenerator(req, res)
      const rules = typeof settings.rules === 'function' ? await settings.rules(req, res) : settings.rules
      const cost = typeof settings.cost === 'function' ? await settings.cost(req, res) : settings.cost
      let decision
      try {
        decision = await limiter.hit(key, rules, { cost })
      } catch (error) {
        if (passOnStoreError && error instanceof StoreUnavailableError) return next()
        throw error
      }
      req[requestPropertyName] = decision
      if (standard) headers.setStandard(res, standard, decision)
      if (legacyHeaders) headers.setLegacy(res, decision)
      if (decision.allowed) return next()
      headers.setRetryAfter(res, decision)
      return await settings.handler(req, res, next, { ...settings, decision })
    } catch (error) {
      return next(error)
    }
  }
}

/** The default rejection: `statusCode` with `message` (a string is sent as text, else as JSON). */
async function sendRejection(req, res, _next, options) {
  const body = typeof options.message === 'function' ? await options.message(req, res) : options.message
  if (typeof res.status === 'function' && typeof res.send === 'function') {
    res.status(options.statusCode).send(body)
    return
  }
  res.statusCode = options.statusCode
  if (typeof body === 'string') {
    res.setHeader('Content-Type', 'text/plain; charset=utf-8')
    res.end(body)
  } else {
    res.setHeader('Content-Type', 'application/json')
    res.end(JSON.stringify(body))
  }
}

function settingsOf(options) {
  if (typeof options !== 'object' || options === null) {
    throw invalidArgument('options', 'expected an options object')
  }
  const standard = options.standardHeaders === undefined || options.standardHeaders === true
    ? 'draft-7'
    : options.standardHeaders
  if (standard !== false && !DRAFTS.includes(standard)) {
    throw invalidArgument('standardHeaders', `expected one of ${DRAFTS.join(', ')}, true or false`)
  }
  for (const name of ['keyGenerator', 'skip', 'handler']) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw invalidArgument(name, 'expected a function')
    }
  }
  return {
    // No I/O here (lazy start): an app boots while Redis is down; its requests follow `onError`.
    limiter:
      options.limiter ??
      new Limiter({
        url: options.url,
        prefix: options.prefix,
        timeoutMs: options.timeoutMs,
        onError: options.onError,
        instances: options.instances,
      }),
    rules: options.rules ?? '60/minute',
    keyGenerator: options.keyGenerator ?? ((req) => req.ip ?? req.socket?.remoteAddress ?? 'unknown'),
    skip: options.skip ?? (() => false),
    cost: options.cost ?? 1,
    handler: options.handler ?? sendRejection,
    statusCode: options.statusCode ?? 429,
    message: options.message ?? 'Too many requests, please try again later.',
    standard,
    legacyHeaders: options.legacyHeaders ?? true,
    passOnStoreError: options.passOnStoreError ?? false,
    requestPropertyName: options.requestPropertyName ?? 'rateLimit',
  }
}

module.exports = { rateLimit }
