// A typed use of the package, checked by `tsc --noEmit` (make test): the declarations must describe
// the API the way a TypeScript user writes against it.

import express from 'express'
import { DistributedLock, Limiter, LockLostError, RatelockError, Semaphore, type Decision } from 'ratelock'
import { rateLimit } from 'ratelock/express'

async function main(): Promise<void> {
  const limiter = new Limiter({ url: process.env.REDIS_URL, onError: 'allow', timeoutMs: 250 })
  const decision: Decision = await limiter.hit('user:42', '10/second; 1000/hour', { cost: 2 })
  const wait: number = decision.allowed ? 0 : decision.retryAfterMs
  console.log(wait, decision.rule.toUpperCase())

  const lock = new DistributedLock('orders:42', { ttlMs: 10_000 })
  const total: number = await lock.using(async (signal: AbortSignal) => {
    if (signal.aborted) throw signal.reason
    return (lock.fencingToken ?? 0) + 1
  })
  console.log(total)

  const seats = new Semaphore('exports', 3)
  const permit = await seats.acquire({ timeoutMs: 1000 })
  await permit.release()

  const app = express()
  app.use(
    rateLimit<express.Request, express.Response>({
      limiter,
      rules: (req) => (req.path.startsWith('/search') ? '3 per 10 seconds' : '100/minute'),
      keyGenerator: (req) => req.ip ?? 'unknown',
      standardHeaders: 'draft-8',
      handler: (_req, res, _next, options) => res.status(429).json({ retryAfterMs: options.decision.retryAfterMs }),
    }),
  )
  try {
    await limiter.hit('k', 'garbage')
  } catch (error) {
    if (error instanceof RatelockError && !(error instanceof LockLostError)) console.log(error.code)
  }
}

void main()
