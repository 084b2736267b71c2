// Types of the npm package `ratelock` (the JavaScript API in index.js; checked by `tsc --noEmit` on
// tests/node/typed-example.ts). The native addon's own, generated declarations are in native.d.ts.

/// <reference types="node" />

import type { FairLockState, RwLockState } from './native'

/** The answer to `hit` or `peek`. Durations are milliseconds. */
export interface Decision {
  /** Whether the request may go ahead (for `hit`: whether units were taken). */
  allowed: boolean
  /** The deciding rule's limit. */
  limit: number
  /** Units the deciding rule has left. */
  remaining: number
  /** Milliseconds until the deciding rule is fully restored. */
  resetAfterMs: number
  /** Milliseconds until a request of this cost could be allowed (0 when allowed). */
  retryAfterMs: number
  /** True when the store failed and `onError` ('allow' or 'deny') answered instead. */
  degraded: boolean
  /** The deciding rule, as canonical text (e.g. `"10/second"`). */
  rule: string
  /** The deciding rule's position in the rule text. */
  ruleIndex: number
  /** The deciding rule's period in milliseconds. */
  periodMs: number
  /** What decided: the rules, a ban, the deny list or the allow list. */
  reason: 'rule' | 'ban' | 'deny_list' | 'allow_list'
  /** True when the request was let through only because what denied it is in shadow (a `shadow` rule,
   * or a limiter with `shadow: true`); the figures are enforcement's. */
  wouldDeny: boolean
  /** True when this process's deny cache answered (no round trip): a denial the store gave before. */
  cached: boolean
}

/** When an entry change happens: `nowMs` replaces the clock, as for `hit`. */
export interface EntryOptions {
  nowMs?: number
}

/** What the `metrics` option takes: a `Metrics` of `ratelock/otel`, or any object (or function) taking
 * an instrument's name, a value (a count, or seconds) and the attributes of every measurement. */
export type MetricsRecorder =
  | { record(name: string, value: number, attributes: Record<string, string>): void }
  | ((name: string, value: number, attributes: Record<string, string>) => void)

/** Where a limiter's or a lock's keys live: the options every kind takes. Equal options share one
 * store (one connection per Redis URL) in the process. */
export interface StoreOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://...`; none: the embedded memory store. */
  url?: string
  /** Key prefix (default `"rl"`); the same prefix, key and rule share one limit in every language. */
  prefix?: string
  /** Each store call's timeout in milliseconds (default 1000). */
  timeoutMs?: number
  /** `rediss://`: the PEM certificate(s) to trust instead of the public roots (a private CA, as
   * GCP Memorystore's in-transit encryption uses); refused with any other URL. */
  tlsRootCa?: string | Buffer
  /** `rediss://`: the client certificate (PEM chain, the client's own first) to present to a server that
   * asks for one (mutual TLS: a self-run Redis asks by default, `tls-auth-clients yes`); given with
   * `tlsClientKey`, refused with any other URL. */
  tlsClientCert?: string | Buffer
  /** `rediss://`: the private key (PEM) of `tlsClientCert`. */
  tlsClientKey?: string | Buffer
  /** `redis+sentinel://` or `rediss+sentinel://`: the sentinels' own password, when it differs from the
   * master's (the URL's credentials then go to the master only); refused with any other URL. */
  sentinelPassword?: string
  /** The sentinels' ACL user, given with `sentinelPassword`. */
  sentinelUsername?: string
  /** The memory store: the most live keys it keeps (default: no bound but memory). With a Redis URL, it
   * bounds a limiter's local fallback (`onError: 'local'`); a lock keeps its state in Redis, so for a
   * lock kind on Redis it has no effect. */
  maxKeys?: number
  /** The memory store, with `maxKeys`: a new key past the bound fails as an outage (`'refuse'`, the
   * default), or the live key nearest its expiry makes room (`'evict'`). */
  whenFull?: 'refuse' | 'evict'
}

export interface LimiterOptions extends StoreOptions {
  /**
   * What an outage answers: reject (`'raise'`, the default), a degraded allow or deny, or (`'local'`)
   * a degraded decision made in this process on its share of each rule (see `instances`).
   * Configuration errors (`ConfigurationError`) and protocol errors always reject.
   */
  onError?: 'raise' | 'allow' | 'deny' | 'local'
  /** Under `onError: 'local'`: how many processes (across all hosts) share the limits (default 1). */
  instances?: number
  /** Shadow mode: a denial is let through with `wouldDeny` set, for rolling a limit out (default false). A
   * rule that `block`s is refused (`InvalidRuleError`): its ban would deny for every limiter on the key. */
  shadow?: boolean
  /**
   * A local deny cache of about this many keys: once the store denies a key, its further calls with the
   * same rules and cost are denied from memory until the denial's `retryAfterMs` (`cached: true`).
   */
  denyCache?: number
  /**
   * The longest the deny cache holds a denial (default: until its `retryAfterMs`): an `unblock`,
   * `clear` or `reset` made in another process shows here by then.
   */
  denyCacheMaxAgeMs?: number
  /** Where every decision and round trip is measured: a `Metrics` of `ratelock/otel`. */
  metrics?: MetricsRecorder
  /** Algorithm of rules that name none (default `'gcra'`). */
  defaultAlgorithm?: 'gcra' | 'token_bucket' | 'leaky_bucket' | 'fixed_window' | 'sliding_window' | 'sliding_log'
  /** Whose clock decides: the store's (default) or this process's. */
  clock?: 'store' | 'local'
}

export interface HitOptions {
  /** Units to take (default 1). */
  cost?: number
  /** Decide at this time (milliseconds since the Unix epoch) instead of the clock. */
  nowMs?: number
}

/** An override's options. */
export interface OverrideOptions {
  /** How long the override lasts, in milliseconds (1 ms to 366 days; none: until cleared). */
  ttlMs?: number
  /** The memory store's clock, in milliseconds since the Unix epoch, instead of the clock. */
  nowMs?: number
}

/** A reservation's options. */
export interface ReserveOptions {
  /** Units to book (default 1). */
  cost?: number
  /** The longest wait for a slot, in milliseconds (0: only now). */
  maxWaitMs: number
  /** Decide at this time (milliseconds since the Unix epoch) instead of the clock. */
  nowMs?: number
}

/** A wait's options. */
export interface WaitOptions {
  /** Units to book (default 1). */
  cost?: number
  /** The longest wait for a slot, in milliseconds (0: only now). */
  maxWaitMs: number
  /** Cancels the wait: the booking is given back and the promise rejects with the signal's reason. */
  signal?: AbortSignal
}

/** Checks keys against rules: every rule of a key in one round trip, all or nothing. */
export declare class Limiter {
  constructor(options?: LimiterOptions)
  /** Reaches the store now (a PING) to fail at boot: rejects with configuration errors and outages alike. */
  connect(): Promise<this>
  /** Reaches the store now (a PING): rejects with configuration errors and outages alike. */
  ping(): Promise<void>
  /** Where the store's circuit breaker stands in this process (`null`: the memory store). */
  readonly breakerState: 'closed' | 'open' | 'half-open' | null
  /** Takes `cost` units from every rule (e.g. `"10/second; 1000/hour"`) if all allow it. */
  hit(key: string | Buffer, rules: string, options?: HitOptions): Promise<Decision>
  /** Answers what `hit` would answer, without taking anything. */
  peek(key: string | Buffer, rules: string, options?: HitOptions): Promise<Decision>
  /** `hit` answered at once, without a Promise: the memory store only (no `url`); on Redis it throws a
   * `ConfigurationError`. */
  hitSync(key: string | Buffer, rules: string, options?: HitOptions): Decision
  /** `peek` answered at once, without a Promise: the memory store only (see `hitSync`). */
  peekSync(key: string | Buffer, rules: string, options?: HitOptions): Decision
  /** Forgets the state of every given rule for `key`. */
  reset(key: string | Buffer, rules: string): Promise<void>
  /** Gives back `cost` units of every rule for `key` where the algorithm can; the decision a peek then gives. */
  refund(key: string | Buffer, rules: string, options?: HitOptions): Promise<Decision>
  /**
   * Books the earliest slot within `maxWaitMs` (gcra, token_bucket, leaky_bucket rules): an allowed
   * decision whose `retryAfterMs` is the wait before acting, or the denial when the slot is further.
   */
  reserve(key: string | Buffer, rules: string, options: ReserveOptions): Promise<Decision>
  /** Reserves, then waits until the slot; `signal` cancels the wait and gives the booking back. */
  wait(key: string | Buffer, rules: string, options: WaitOptions): Promise<Decision>
  /**
   * Gives `key` other limits for its rules of the same windows (a tenant's plan), read in the same call
   * as every decision; for `ttlMs`, or until `clearOverride`.
   */
  setOverride(key: string | Buffer, rules: string, options?: OverrideOptions): Promise<void>
  /** Takes `key`'s override away; true when it had one. */
  clearOverride(key: string | Buffer): Promise<boolean>
  /** Bans `key` for `durationMs`: every hit and peek is denied with `reason: 'ban'`. */
  block(key: string | Buffer, durationMs: number, options?: EntryOptions): Promise<void>
  /** Lifts `key`'s ban; true when it had one (a list entry stays). */
  unblock(key: string | Buffer, options?: EntryOptions): Promise<boolean>
  /** Puts `key` on the deny list for `ttlMs` (`reason: 'deny_list'`). */
  deny(key: string | Buffer, ttlMs: number, options?: EntryOptions): Promise<void>
  /** Puts `key` on the allow list for `ttlMs`: it passes and spends nothing (`reason: 'allow_list'`). */
  allow(key: string | Buffer, ttlMs: number, options?: EntryOptions): Promise<void>
  /** Takes `key` off the deny or allow list; true when it was on one (a ban stays). */
  clear(key: string | Buffer, options?: EntryOptions): Promise<boolean>
  readonly prefix: string
  /** The algorithm of rules that name none. */
  readonly defaultAlgorithm: string
}

/** What a lock of every kind is made with. */
interface LockKindOptions extends StoreOptions {
  /** Each hold's lease length (default 30000). */
  ttlMs?: number
  /** Renew each hold's lease while held (default true). */
  autoRenew?: boolean
  /** Where every wait, hold and loss is measured: a `Metrics` of `ratelock/otel`. */
  metrics?: MetricsRecorder
}

export interface LockOptions extends LockKindOptions {
  /** Let this instance take the lock again while holding it (default false). */
  reentrant?: boolean
}

export interface AcquireOptions {
  /**
   * How long to wait (default, or `Infinity`: no limit); then `WaitTimeoutError`. `0` is a wait that
   * ends at once: one try, then `WaitTimeoutError` if the lock is held.
   */
  timeoutMs?: number
  /**
   * Stops the wait: the promise rejects with the signal's reason, and nothing stays taken (a fair
   * lock's place is withdrawn, a hold granted meanwhile is given back).
   */
  signal?: AbortSignal
}

/**
 * What `using()` runs while a hold is kept: `signal` aborts with a `LockLostError` as soon as the hold
 * is known lost. The hold is given back after it, also after a throw, and `using()` resolves to what
 * it resolves to.
 */
type Work<T> = (signal: AbortSignal) => Promise<T> | T

/** A lock shared by every process (in any language) on the same store and name. */
export declare class DistributedLock {
  constructor(name: string | Buffer, options?: LockOptions)
  /** Takes the lock if it is free. */
  tryAcquire(): Promise<boolean>
  /** Waits for the lock; resolves to the hold's fencing token. */
  acquire(options?: AcquireOptions): Promise<number>
  /** Gives back the latest hold (`'still_held'`: a re-entrant lock keeps others); `LockNotOwnedError` if none, `LockLostError` if it had been lost. */
  release(): Promise<ReleaseOutcome>
  /** Moves the latest hold's lease end (default: the ttl); `LockLostError` if it expired or was taken. */
  extend(options?: { ttlMs?: number }): Promise<void>
  /** Acquires, runs `work`, releases (see `Work`). */
  using<T>(work: Work<T>, options?: AcquireOptions): Promise<T>
  /** The latest hold's fencing token; send it with every write to the protected resource. */
  readonly fencingToken: number | null
  /** True once the latest hold is known lost. */
  readonly lost: boolean
  /** Why the latest hold was lost; `null` while it is not, or with no hold. */
  readonly lostReason: LostReason | null
  /** The error that refused the latest hold's renewal when `lostReason` is `'failed'`. */
  readonly lostError: RatelockError | null
  isLocked(): Promise<boolean>
  remainingTtlMs(): Promise<number | null>
  /** Deletes the lease whoever holds it (an operator's tool). */
  forceRelease(): Promise<boolean>
  readonly ownerToken: string | null
}

export interface SemaphoreOptions extends LockKindOptions {}

/**
 * Why a hold was lost: its lease ran out without a renewal (`'expired'`), the store said it is gone or
 * held by another (`'taken'`), or a renewal was refused for good (`'failed'`: see `lostError`).
 */
export type LostReason = 'expired' | 'taken' | 'failed'

/** What a release did: the hold was given back, or one hold of a re-entrant lock was and others remain. */
export type ReleaseOutcome = 'released' | 'still_held'

/** One hold of a lock kind: a lease, renewed while held. */
declare class Guard {
  protected constructor()
  /** True once the hold is known lost. */
  readonly lost: boolean
  /** Why the hold was lost; `null` while it is not. */
  readonly lostReason: LostReason | null
  /** The error that refused the renewal when `lostReason` is `'failed'`. */
  readonly lostError: RatelockError | null
  /** Moves the lease end (default: the ttl); `LockLostError` if the hold is gone. */
  extend(options?: { ttlMs?: number }): Promise<void>
  /** Gives the hold back; `LockNotOwnedError` if released already, `LockLostError` if it had been lost. */
  release(): Promise<ReleaseOutcome>
}

/** One permit of a `Semaphore`. */
export declare class PermitGuard extends Guard {}
/** @deprecated The earlier name of `PermitGuard`. */
export declare const Permit: typeof PermitGuard
/** @deprecated The earlier name of `PermitGuard`. */
export type Permit = PermitGuard

/** At most `permits` holders at once across every process on the same store and name. */
export declare class Semaphore {
  constructor(name: string | Buffer, permits: number, options?: SemaphoreOptions)
  tryAcquire(): Promise<PermitGuard | null>
  acquire(options?: AcquireOptions): Promise<PermitGuard>
  inUse(): Promise<number>
  using<T>(work: Work<T>, options?: AcquireOptions): Promise<T>
}

export interface FairLockOptions extends LockKindOptions {
  /** How long a waiter's place lasts unless renewed, i.e. how long a dead waiter can hold up the queue (default 5000). */
  waiterTtlMs?: number
}

export interface ReadWriteLockOptions extends FairLockOptions {
  /** A waiting writer holds back new readers, so writers are not starved (default true). */
  preferWriters?: boolean
}

/** One hold of a `FairLock`, or a read or write hold of a `ReadWriteLock`. */
export declare class LeaseGuard extends Guard {
  /** Higher than every earlier grant of the same lock; send it with every write to the protected resource. */
  readonly fencingToken: number
  /** Aborts with a `LockLostError` as soon as the hold is known lost. */
  readonly signal: AbortSignal
}

/** @deprecated The earlier name of `LeaseGuard`. */
export declare const LeaseHold: typeof LeaseGuard
/** The longest key, in bytes, any call accepts (64 KiB); a longer one is an `InvalidArgumentError`. */
export declare const MAX_KEY_BYTES: number
/** The most rules one call checks together (100); more is an `InvalidRuleError`. */
export declare const MAX_RULES: number
/** @deprecated The earlier name of `LeaseGuard`. */
export type LeaseHold = LeaseGuard

/** A fair lock as it stands, and a read-write lock as it stands: the addon's objects, as they come. */
export type { FairLockState, RwLockState }

/** A lock handed out first come, first served across every process on the same store and name. */
export declare class FairLock {
  constructor(name: string | Buffer, options?: FairLockOptions)
  /** Takes the lock if it is free and nobody is waiting (never queues). */
  tryAcquire(): Promise<LeaseGuard | null>
  /** Queues and waits for its turn; `WaitTimeoutError` (leaving the queue) after `timeoutMs`. */
  acquire(options?: AcquireOptions): Promise<LeaseGuard>
  state(): Promise<FairLockState>
  isLocked(): Promise<boolean>
  using<T>(work: Work<T>, options?: AcquireOptions): Promise<T>
}

/** Many readers or one writer across every process on the same store and name. */
export declare class ReadWriteLock {
  constructor(name: string | Buffer, options?: ReadWriteLockOptions)
  /** A read hold if no writer holds (or, with writer preference, waits for) the lock. */
  tryAcquireRead(): Promise<LeaseGuard | null>
  acquireRead(options?: AcquireOptions): Promise<LeaseGuard>
  /** The write hold if nobody holds the lock (never marks itself waiting). */
  tryAcquireWrite(): Promise<LeaseGuard | null>
  acquireWrite(options?: AcquireOptions): Promise<LeaseGuard>
  state(): Promise<RwLockState>
  usingRead<T>(work: Work<T>, options?: AcquireOptions): Promise<T>
  usingWrite<T>(work: Work<T>, options?: AcquireOptions): Promise<T>
}

/** Base of every ratelock error; `code` is stable (`ERR_RATELOCK_...`). */
export declare class RatelockError extends Error {
  static readonly code: string
  readonly code: string
}
export declare class InvalidRuleError extends RatelockError {}
export declare class InvalidArgumentError extends RatelockError {}
export declare class CostExceedsCapacityError extends RatelockError {}
export declare class StoreUnavailableError extends RatelockError {}
export declare class StoreTimeoutError extends StoreUnavailableError {}
export declare class WaitTimeoutError extends RatelockError {}
export declare class LockNotOwnedError extends RatelockError {}
export declare class LockLostError extends RatelockError {}
/** A reply that does not match its call, or a state the store did not expect: a bug, never an outage (no `onError` policy covers it). */
export declare class ProtocolError extends RatelockError {}
/** The store refused ratelock's setup (password, ACL permission, db index): rejects whatever `onError` says. */
export declare class ConfigurationError extends RatelockError {}
export declare class InternalError extends RatelockError {}

// Only what is exported above is the package's (`Guard`, `Work` and `LockKindOptions` are not).
export {}
