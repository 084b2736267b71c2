'use strict'
// The framework rows of the Node benchmark: one limited route in Fastify (ratelock's plugin beside
// @fastify/rate-limit) and in Hono on @hono/node-server (ratelock's middleware beside hono-rate-limiter's
// RedisStore), each beside the same route with no limiter, as Node http servers for `httpRate`.

const http = require('node:http')

/** Fastify apps: bare, ratelock/fastify, @fastify/rate-limit on ioredis. */
async function fastifyVariants(url, client, rule, huge) {
  const Fastify = require('fastify')
  const build = async (register) => {
    const app = Fastify()
    if (register) await register(app)
    app.get('/item', async () => 'ok')
    await app.ready()
    return app.server
  }
  return {
    bare: await build(null),
    ratelock: await build((app) => app.register(require('ratelock/fastify'), { url, rules: rule, keyGenerator: () => 'bench:fastify' })),
    peer: await build((app) =>
      app.register(require('@fastify/rate-limit'), { max: huge, timeWindow: 60_000, redis: client, keyGenerator: () => 'bench:fastify-peer' }),
    ),
  }
}

/** Hono apps on @hono/node-server: bare, ratelock/hono, hono-rate-limiter with its RedisStore on ioredis. */
function honoVariants(url, client, rule, huge) {
  const { Hono } = require('hono')
  const { getRequestListener } = require('@hono/node-server')
  const { rateLimiter, RedisStore } = require('hono-rate-limiter')
  const build = (middleware) => {
    const app = new Hono()
    if (middleware) app.use(middleware)
    app.get('/item', (c) => c.text('ok'))
    return http.createServer(getRequestListener(app.fetch))
  }
  // hono-rate-limiter's Redis client shape, over ioredis.
  const redisClient = {
    scriptLoad: (script) => client.script('LOAD', script),
    evalsha: (sha, keys, args) => client.evalsha(sha, keys.length, ...keys, ...args),
    decr: (key) => client.decr(key),
    del: (key) => client.del(key),
  }
  return {
    bare: build(null),
    ratelock: build(require('ratelock/hono').rateLimit({ url, rules: rule, keyGenerator: () => 'bench:hono' })),
    peer: build(
      rateLimiter({
        windowMs: 60_000,
        limit: huge,
        standardHeaders: 'draft-7',
        keyGenerator: () => 'bench:hono-peer',
        store: new RedisStore({ client: redisClient }),
      }),
    ),
  }
}

module.exports = { fastifyVariants, honoVariants }
