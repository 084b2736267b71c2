'use strict'
// One small app per Node framework (Express, Fastify, Koa, Hono on @hono/node-server), each limited the
// same way through ratelock's adapter for it, with the routes of the Python adapter apps
// (tests/python/adapter_apps): /search, /ban, /shadow, /tenant, /cost, /key, /skip, /decision; and /login and
// /upload, which count only failed or only successful requests. `serve` listens on a
// free port and answers its base URL; `node adapter-apps.js <framework>` serves one from its
// environment (RATELOCK_URL, RATELOCK_ON_ERROR, ...) and prints its port, for the cross-language tests.

const http = require('node:http')
const { randomUUID } = require('node:crypto')

const SEARCH_RULES = '3/hour'
/** `/ban`: a rule that bans the client for ten minutes once it denies. */
const BAN_RULES = '2/hour block 10 minutes'
/** `/shadow`: a rule in shadow, which lets every request through and still says what it would do. */
const SHADOW_RULES = '2/hour shadow'
const PLANS = { free: '2/hour', pro: '5/hour' }
/** `/login` and `/upload`: the requests they count. */
const COUNTED_RULES = '2/hour'
const FRAMEWORKS = ['express', 'fastify', 'koa', 'hono']

/** The options every adapter takes, from a plain settings object (as the Python apps read their env). */
function adapterOptions(settings = {}) {
  return {
    url: settings.url,
    prefix: settings.prefix ?? `n${randomUUID().slice(0, 10)}`,
    onError: settings.onError ?? 'raise',
    timeoutMs: settings.timeoutMs ?? 500,
    trustedProxies: settings.trustedProxies,
    deniedBody: settings.deniedBody,
    legacyHeaders: settings.legacyHeaders,
  }
}

/** Every route of the apps: its path, its limit (by the request's query), and its answer. */
function routes() {
  const query = (url) => new URL(url, 'http://x').searchParams
  return [
    { path: '/search', limit: { rules: SEARCH_RULES, scope: 'search' } },
    { path: '/ban', limit: { rules: BAN_RULES, scope: 'ban' } },
    { path: '/shadow', limit: { rules: SHADOW_RULES, scope: 'shadow' } },
    {
      path: '/tenant',
      limit: { rules: (url) => PLANS[query(url).get('plan')], scope: 'tenant', keyGenerator: (url) => query(url).get('plan') },
    },
    { path: '/cost', limit: { rules: '10/hour', scope: 'cost', cost: (url) => Number(query(url).get('n') ?? 1) } },
    { path: '/key', limit: { rules: '5/hour', scope: 'key', keyGenerator: (url) => query(url).get('k') ?? undefined } },
    { path: '/skip', limit: { rules: '1/hour', scope: 'skip', skip: () => true } },
    { path: '/decision', limit: { rules: '50/hour', scope: 'decision' }, decision: true },
    // Only failed logins count: `?ok=1` succeeds, anything else is a 401.
    {
      path: '/login',
      limit: { rules: COUNTED_RULES, scope: 'login', skipSuccessfulRequests: true },
      status: (url) => (query(url).get('ok') === '1' ? 200 : 401),
    },
    // Only successful uploads count: without `?ok=1` the handler throws (the framework answers 500).
    {
      path: '/upload',
      limit: { rules: COUNTED_RULES, scope: 'upload', skipFailedRequests: true },
      throws: (url) => query(url).get('ok') !== '1',
    },
  ]
}

/** The status a route answers `url` with; throws where the route's handler fails. */
function statusOf(route, url) {
  if (route.throws?.(url)) throw new Error('the handler failed')
  return route.status?.(url) ?? 200
}

/** A route's limit options for an adapter whose functions get `args`, reading the URL with `urlOf`. */
function limitFor(route, urlOf) {
  const wrap = (value) => (typeof value === 'function' ? (...args) => value(urlOf(...args)) : value)
  return Object.fromEntries(Object.entries(route.limit).map(([name, value]) => [name, wrap(value)]))
}

const decisionBody = (decision) => JSON.stringify({ remaining: decision.remaining, degraded: decision.degraded })

function expressApp(settings) {
  const express = require('express')
  const { rateLimit } = require('ratelock/express')
  const { HttpLimiter } = require('ratelock/http')
  const app = express()
  const shared = new HttpLimiter(adapterOptions(settings))
  for (const route of routes()) {
    const limit = rateLimit({ http: shared, ...limitFor(route, (req) => req.originalUrl) })
    app.get(route.path, limit, (req, res) => {
      res.status(statusOf(route, req.originalUrl)).type('application/json').send(route.decision ? decisionBody(req.rateLimit) : '{"ok":true}')
    })
  }
  // A failing handler's 500, without a stack trace on the test's output.
  app.use((_error, _req, res, _next) => res.status(500).type('text/plain').send('failed'))
  return http.createServer(app)
}

async function fastifyApp(settings) {
  const fastify = require('fastify')({ logger: false })
  await fastify.register(require('ratelock/fastify'), { ...adapterOptions(settings), global: false })
  for (const route of routes()) {
    fastify.get(route.path, { config: { rateLimit: limitFor(route, (request) => request.url) } }, async (request, reply) => {
      reply.code(statusOf(route, request.url)).type('application/json')
      return route.decision ? decisionBody(request.rateLimit) : '{"ok":true}'
    })
  }
  await fastify.ready()
  return fastify.server
}

function koaApp(settings) {
  const Koa = require('koa')
  const { rateLimit } = require('ratelock/koa')
  const { HttpLimiter } = require('ratelock/http')
  const app = new Koa()
  app.silent = true // a failing handler's 500, without a stack trace on the test's output
  const shared = new HttpLimiter(adapterOptions(settings))
  const limited = new Map(routes().map((route) => [route.path, { route, middleware: rateLimit({ http: shared, ...limitFor(route, (ctx) => ctx.url) }) }]))
  app.use(async (ctx, next) => {
    const entry = limited.get(ctx.path)
    if (!entry) return next()
    return entry.middleware(ctx, async () => {
      ctx.status = statusOf(entry.route, ctx.url)
      ctx.type = 'application/json'
      ctx.body = entry.route.decision ? decisionBody(ctx.state.rateLimit) : '{"ok":true}'
    })
  })
  return http.createServer(app.callback())
}

function honoApp(settings) {
  const { Hono } = require('hono')
  const { getRequestListener } = require('@hono/node-server')
  const { rateLimit } = require('ratelock/hono')
  const { HttpLimiter } = require('ratelock/http')
  const app = new Hono()
  app.onError((_error, c) => c.text('failed', 500)) // without a stack trace on the test's output
  const shared = new HttpLimiter(adapterOptions(settings))
  for (const route of routes()) {
    app.get(route.path, rateLimit({ http: shared, ...limitFor(route, (c) => c.req.url) }), (c) =>
      c.body(route.decision ? decisionBody(c.get('rateLimit')) : '{"ok":true}', statusOf(route, c.req.url), {
        'Content-Type': 'application/json',
      }),
    )
  }
  return http.createServer(getRequestListener(app.fetch))
}

const BUILDERS = { express: expressApp, fastify: fastifyApp, koa: koaApp, hono: honoApp }

/** Serves `framework`'s app on a free port of `host`; resolves to `{ base, port, close }`. */
async function serve(framework, settings = {}, host = '127.0.0.1') {
  const server = await BUILDERS[framework](settings)
  await new Promise((resolve) => server.listen(0, host, resolve))
  const { port } = server.address()
  return {
    port,
    base: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.()
        server.close(resolve)
      }),
  }
}

module.exports = { FRAMEWORKS, SEARCH_RULES, COUNTED_RULES, serve }

if (require.main === module) {
  const framework = process.argv[2]
  const env = process.env
  const trusted = env.RATELOCK_TRUSTED_PROXIES
  serve(framework, {
    url: env.RATELOCK_URL || undefined,
    prefix: env.RATELOCK_PREFIX,
    onError: env.RATELOCK_ON_ERROR,
    trustedProxies: trusted ? (/^\d+$/.test(trusted) ? Number(trusted) : trusted.split(',')) : undefined,
    deniedBody: env.RATELOCK_DENIED_BODY,
    legacyHeaders: env.RATELOCK_LEGACY_HEADERS === '1',
  }, env.RATELOCK_HOST ?? '127.0.0.1').then(({ port }) => console.log(`listening ${port}`))
}
