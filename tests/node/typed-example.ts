// A typed use of the package, checked by `tsc --noEmit` (make test): the declarations must describe
// the API the way a TypeScript user writes against it.

import express from 'express'
import {
  DistributedLock,
  FairLock,
  Limiter,
  LockLostError,
  RatelockError,
  ReadWriteLock,
  Semaphore,
  WaitTimeoutError,
  type Decision,
  type FairLockState,
  type LeaseGuard,
  type RwLockState,
  type StoreOptions,
} from 'ratelock'
import { rateLimit } from 'ratelock/express'
import { Metrics } from 'ratelock/otel'
import { MeterProvider } from '@opentelemetry/sdk-metrics'

async function main(): Promise<void> {
  const limiter = new Limiter({ url: process.env.REDIS_URL, onError: 'allow', timeoutMs: 250 })
  const decision: Decision = await limiter.hit('user:42', '10/second; 1000/hour', { cost: 2 })
  const wait: number = decision.allowed ? 0 : decision.retryAfterMs
  console.log(wait, decision.rule.toUpperCase())

  // A private CA for rediss://, and a bounded memory store: options every kind takes.
  const managed: StoreOptions = { url: process.env.REDIS_TLS_URL, tlsRootCa: Buffer.from(process.env.REDIS_CA ?? '') }
  const bounded = new Limiter({ maxKeys: 100_000, whenFull: 'evict' })
  console.log((await bounded.hit('user:42', '5/second')).remaining, new Semaphore('exports', 4, managed))

  const lock = new DistributedLock('orders:42', { ttlMs: 10_000 })
  const total: number = await lock.using(async (signal: AbortSignal) => {
    if (signal.aborted) throw signal.reason
    return (lock.fencingToken ?? 0) + 1
  })
  console.log(total)

  const seats = new Semaphore('exports', 3)
  const permit = await seats.acquire({ timeoutMs: 1000 })
  await permit.release()

  const payouts = new FairLock('payouts', { url: process.env.REDIS_URL, ttlMs: 5000, waiterTtlMs: 2000 })
  const turn: LeaseGuard = await payouts.acquire({ timeoutMs: 1000 })
  const fence: number = turn.fencingToken
  if (!turn.lost && !turn.signal.aborted) await turn.extend({ ttlMs: 10_000 })
  await turn.release()
  const queued: FairLockState = await payouts.state()
  console.log(fence, queued.waiting, queued.held ? queued.remainingMs : 0)
  const maybe: LeaseGuard | null = await payouts.tryAcquire()
  await maybe?.release()
  const paid: string = await payouts.using(async (signal) => (signal.aborted ? 'lost' : 'paid'), { timeoutMs: 500 })

  const config = new ReadWriteLock('config', { preferWriters: false, autoRenew: true })
  const reader: LeaseGuard = await config.acquireRead({ timeoutMs: 100 })
  const writer: LeaseGuard | null = await config.tryAcquireWrite()
  await Promise.all([reader.release(), writer?.release()])
  const rw: RwLockState = await config.state()
  const seen: number = await config.usingRead(() => rw.readers + rw.waitingWriters)
  try {
    await config.usingWrite(async (signal: AbortSignal) => signal.throwIfAborted(), { timeoutMs: 50 })
  } catch (error) {
    if (error instanceof WaitTimeoutError) console.log(error.code, paid, seen, rw.writerRemainingMs)
  }

  const app = express()
  app.use(
    rateLimit<express.Request, express.Response>({
      limiter,
      rules: (req) => (req.path.startsWith('/search') ? '3 per 10 seconds' : '100/minute'),
      keyGenerator: (req) => req.ip ?? 'unknown',
      standardHeaders: 'draft-8',
      handler: (_req, res, _next, { answer, decision }) =>
        res.status(answer.status).json({ retryAfterMs: decision?.retryAfterMs ?? null }),
    }),
  )
  try {
    await limiter.hit('k', 'garbage')
  } catch (error) {
    if (error instanceof RatelockError && !(error instanceof LockLostError)) console.log(error.code)
  }
}

void main()

// OpenTelemetry metrics: a Metrics (or a record function) for a limiter and every lock kind.
const metrics = new Metrics({ meterProvider: new MeterProvider() })
const measured: Limiter = new Limiter({ metrics })
const measuredLock = new DistributedLock('nightly', { metrics })
const recorded = new Semaphore('pool', 2, { metrics: (name: string, value: number) => console.log(name, value) })
void [measured, measuredLock, recorded]
