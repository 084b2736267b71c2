'use strict'
// An Express app limited by ratelock: a global limit per client, and a tighter one on /search keyed by
// the `user` query parameter. The embedded memory store by default; set REDIS_URL to share the limits
// with every process (in any language) on that Redis.
//   node express_app.js            # listens on PORT (default 3000)

const express = require('express')
const { Limiter } = require('ratelock')
const { rateLimit } = require('ratelock/express')

function createApp({ url = process.env.REDIS_URL } = {}) {
  const limiter = new Limiter({ url, onError: 'allow' })
  const app = express()
  app.use(rateLimit({ limiter, rules: '100/minute', standardHeaders: 'draft-7' }))
  app.get(
    '/search',
    rateLimit({
      limiter,
      rules: '3 per 10 seconds',
      keyGenerator: (req) => `search:${req.query.user ?? req.ip}`,
      handler: (_req, res, _next, { decision }) =>
        res.status(429).json({ error: 'slow down', retryAfterMs: Math.ceil(decision.retryAfterMs) }),
    }),
    (req, res) => res.json({ results: [], for: req.query.user ?? null }),
  )
  return app
}

if (require.main === module) {
  const port = Number(process.env.PORT ?? 3000)
  createApp().listen(port, '127.0.0.1', () => {
    console.log(`listening on http://127.0.0.1:${port} (${process.env.REDIS_URL ?? 'memory store'})`)
  })
}

module.exports = { createApp }
