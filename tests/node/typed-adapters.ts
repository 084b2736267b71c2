// A typed use of each framework adapter, checked by `tsc --noEmit` (make test): Fastify, Koa and Hono
// with their own types, the adapter core itself, and Express's refusal handler.

import Fastify from 'fastify'
import Koa from 'koa'
import { Hono } from 'hono'
import express from 'express'
import ratelockFastify from 'ratelock/fastify'
import { rateLimit as koaRateLimit } from 'ratelock/koa'
import { rateLimit as honoRateLimit } from 'ratelock/hono'
import { rateLimit as expressRateLimit } from 'ratelock/express'
import { HttpLimiter, headerPairs, scopedKey, type Checked } from 'ratelock/http'
import type { Decision } from 'ratelock'

async function fastifyApp(): Promise<void> {
  const app = Fastify()
  await app.register(ratelockFastify, {
    url: process.env.REDIS_URL,
    rules: '100/minute',
    standardHeaders: 'draft-11',
    deniedBody: 'problem',
    allowList: ['127.0.0.1'],
    onExceeded: (request: { url: string }, key: string | Buffer) => console.log('refused', request.url, key),
  })
  const search = { rules: '3/minute', scope: 'search', onExceeding: async (_request: unknown, key: string | Buffer) => console.log(key) }
  app.get('/search', { config: { rateLimit: search } }, async () => ({ ok: true }))
}

function koaApp(): Koa {
  const app = new Koa()
  app.use(koaRateLimit<Koa.Context>({ rules: (ctx) => (ctx.query.plan === 'pro' ? '100/minute' : '10/minute'), trustedProxies: 1, throw: true }))
  app.use((ctx) => {
    const decision = ctx.state.rateLimit as Decision
    ctx.body = { remaining: decision.remaining }
  })
  return app
}

function honoApp(): Hono {
  const app = new Hono()
  app.use(honoRateLimit({ rules: '100/minute', keyGenerator: (c) => c.req.header('x-api-key') ?? null, legacyHeaders: true }))
  app.use(honoRateLimit({ rules: '1000/hour', handler: (c, _next, { decision }) => c.text(`wait ${decision?.retryAfterMs} ms`, 429) }))
  app.get('/', (c) => c.text('ok'))
  return app
}

function expressApp(): express.Express {
  const app = express()
  app.use(
    expressRateLimit<express.Request, express.Response>({
      rules: '100/minute',
      cost: (req) => Number(req.query.n ?? 1),
      handler: (_req, res, _next, { answer }) => res.status(answer.status).send('slow down'),
    }),
  )
  return app
}

async function ownFramework(): Promise<number> {
  const http = new HttpLimiter<[{ peer: string }]>({ deniedBody: 'json' })
  const limit = http.limit({ rules: '5/second', scope: 'mine' })
  const checked: Checked = await http.check(limit, [{ peer: '::1' }], '::1', null)
  const counted: string | Buffer | null = checked.key
  const joined: string = scopedKey('mine', typeof counted === 'string' ? counted : 'ann')
  for (const [name, value] of checked.answer ? headerPairs(checked.answer) : []) console.log(name, value, joined)
  return checked.answer?.status ?? 200
}

void fastifyApp
void koaApp
void honoApp
void expressApp
void ownFramework
