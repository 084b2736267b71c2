'use strict'
// examples/node/express_app.js: an Express app limited by ratelock. The embedded memory store by
// default; set REDIS_URL to share the limits with every process (in any language) on that Redis.
//   node express_app.js            # listens on PORT (default 3000)

const express = require('express')
const { rateLimit } = require('ratelock/express')

function createApp({ url = process.env.REDIS_URL } = {}) {
  const app = express()
  app.get('/search', rateLimit({ url, rules: '3 per 10 seconds; 20/hour', scope: 'search' }), (req, res) =>
    res.json({ results: [], remaining: req.rateLimit.remaining }),
  )
  app.get('/health', (_req, res) => res.json({ ok: true }))
  return app
}

if (require.main === module) {
  const port = Number(process.env.PORT ?? 3000)
  createApp().listen(port, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${port}`))
}

module.exports = { createApp }
