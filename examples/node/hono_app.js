'use strict'
// examples/node/hono_app.js: a Hono app on Node (@hono/node-server) limited by ratelock on /search.
// Memory store by default, REDIS_URL for Redis.
//   node hono_app.js               # listens on PORT (default 3000)

const { Hono } = require('hono')
const { serve } = require('@hono/node-server')
const { rateLimit } = require('ratelock/hono')

function createApp({ url = process.env.REDIS_URL } = {}) {
  const app = new Hono()
  app.get('/search', rateLimit({ url, rules: '3 per 10 seconds; 20/hour', scope: 'search' }), (c) =>
    c.json({ results: [], remaining: c.get('rateLimit').remaining }),
  )
  app.get('/health', (c) => c.json({ ok: true }))
  return app
}

if (require.main === module) {
  serve({ fetch: createApp().fetch, port: Number(process.env.PORT ?? 3000), hostname: '127.0.0.1' })
}

module.exports = { createApp }
