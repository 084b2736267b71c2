'use strict'
// examples/node/koa_app.js: a Koa app limited by ratelock on /search. Memory store by default,
// REDIS_URL for Redis.
//   node koa_app.js                # listens on PORT (default 3000)

const Koa = require('koa')
const { rateLimit } = require('ratelock/koa')

function createApp({ url = process.env.REDIS_URL } = {}) {
  const app = new Koa()
  const search = rateLimit({ url, rules: '3 per 10 seconds; 20/hour', scope: 'search' })
  app.use(async (ctx, next) => {
    if (ctx.path !== '/search') return next()
    return search(ctx, async () => {
      ctx.body = { results: [], remaining: ctx.state.rateLimit.remaining }
    })
  })
  app.use((ctx) => {
    ctx.body = { ok: true }
  })
  return app
}

if (require.main === module) {
  createApp().listen(Number(process.env.PORT ?? 3000), '127.0.0.1')
}

module.exports = { createApp }
