'use strict'
// examples/node/fastify_app.js: a Fastify app limited by ratelock's plugin: every route gets the global
// limit, /search its own through `config.rateLimit`, /health none. Memory store by default, REDIS_URL
// for Redis.
//   node fastify_app.js            # listens on PORT (default 3000)

const Fastify = require('fastify')

async function createApp({ url = process.env.REDIS_URL } = {}) {
  const app = Fastify()
  await app.register(require('ratelock/fastify'), { url, rules: '100/minute' })
  const search = { rules: '3 per 10 seconds; 20/hour', scope: 'search' }
  app.get('/search', { config: { rateLimit: search } }, async (request) => ({ results: [], remaining: request.rateLimit.remaining }))
  app.get('/health', { config: { rateLimit: false } }, async () => ({ ok: true }))
  return app
}

if (require.main === module) {
  createApp().then((app) => app.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' }))
}

module.exports = { createApp }
