// ESM entry point: the CommonJS exports of index.js under their names.
import ratelock from './index.js'

export const {
  Limiter,
  DistributedLock,
  Semaphore,
  Permit,
  FairLock,
  ReadWriteLock,
  LeaseGuard,
  LeaseHold,
  RatelockError,
  InvalidRuleError,
  InvalidArgumentError,
  CostExceedsCapacityError,
  StoreUnavailableError,
  StoreTimeoutError,
  WaitTimeoutError,
  LockNotOwnedError,
  LockLostError,
  ProtocolError,
  ConfigurationError,
  InternalError,
} = ratelock
export default ratelock
