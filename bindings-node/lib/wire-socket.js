'use strict'
// `Limiter` calls on one plain `redis://` server over a socket on this thread: one call is one
// loopback round trip, with no hop to the addon's runtime and back. The addon's `NativeWire` encodes
// every call and decodes every reply (protocol, decisions and the failure policy stay in Rust); this
// file only moves bytes: it pipelines calls on one connection, matches replies to calls in order,
// keeps each call's timeout, and reconnects on the next call after the connection is lost. Every call
// first passes the store's circuit breaker (shared with the addon's other paths): while it is open,
// calls get the failure policy's answer at once; a failed connect or a timeout here opens it. A close
// the server sends (FIN: an idle timeout, CLIENT KILL) retires the connection at once: later calls go
// out on a fresh one, and calls encoded but not yet written move to it; calls already written wait
// for their replies and fail if the connection ends first (they may have run: never sent again).
// Each connection first asks whether the server has the ratelock module (unless the URL's
// `server_code` settles it); calls encoded after the answer go as the module's command, and one the
// server refuses without running (the module unloaded, an ACL denial) goes again once as EVALSHA.

const net = require('node:net')
const { performance } = require('node:perf_hooks')

const native = require('./native')
const { fromNative, ProtocolError } = require('./errors')
const { FIELDS, decision } = require('./decision')

// What `NativeWire.takeDecision` says.
const PENDING = 0
const DECIDED = 1
const NO_SCRIPT = 2
const REFUSED = 3

// What a reply in a connection's queue answers.
const CALL = 0 // a limiter call
const SETUP = 1 // AUTH or SELECT: an error fails the connection
const LOAD = 2 // SCRIPT LOAD: an error shows in the retried call's reply (NOSCRIPT again)
const CHECK = 3 // the module check: its replies choose how later calls are encoded

/** The queue is compacted once this many answered entries lie before its head. */
const COMPACT_AT = 1024
/** Bytes of the buffer that calls are encoded into (a new one when less than `OUTBOX_SLACK` is left). */
const OUTBOX_SIZE = 64 * 1024
const OUTBOX_SLACK = 4 * 1024

class WireClient {
  #limiter
  #url
  #timeoutMs
  #link = null
  #codec
  #codecUsed = false
  #out = new Float64Array(FIELDS)

  /** A client for `url` if it is one plain `redis://` server (else `null`: use the runtime). */
  static open(limiter, url, timeoutMs) {
    const codec = native.openWire(limiter, url)
    return codec === null ? null : new WireClient(limiter, url, timeoutMs, codec)
  }

  constructor(limiter, url, timeoutMs, codec) {
    this.#limiter = limiter
    this.#url = url
    this.#timeoutMs = timeoutMs
    this.#codec = codec
  }

  /** `hit` (spend) or `peek` of prepared rules `parsed`; resolves to the decision. */
  call(key, parsed, cost, nowMs, spend) {
    try {
      const rules = parsed.rules
      if (!this.#codec.admit()) {
        this.#codec.refusedInto(key, rules, cost, spend, this.#out)
        return Promise.resolve(decision(this.#out, 0, parsed))
      }
      return (this.#link ?? this.#connect()).call(key, parsed, rules, cost, nowMs, spend)
    } catch (error) {
      return Promise.reject(fromNative(error))
    }
  }

  #connect() {
    // A new connection starts with a new reader.
    if (this.#codecUsed) this.#codec = native.openWire(this.#limiter, this.#url)
    this.#codecUsed = true
    const link = new Link(
      this.#codec,
      this.#timeoutMs,
      () => {
        if (this.#link === link) this.#link = null
      },
      (entries) => {
        const next = this.#link ?? this.#connect()
        for (const entry of entries) next.adopt(entry)
      },
    )
    this.#link = link
    return link
  }
}

/** One connection: its socket, its reader, the calls waiting for replies in order, their timer. */
class Link {
  #codec
  #socket
  #timeoutMs
  #onEnd
  #onUnsent
  #retired = false
  #queue = []
  #head = 0
  /** Entries before this index are answered or past their deadline. */
  #expired = 0
  #inFlight = 0
  #timer = null
  #flushing = false
  #ended = false
  #connected = false
  /** Whether replies are read with each call's key (only the local fallback needs it). */
  #keyNeeded
  /** A configuration error met while setting up (AUTH, SELECT): every call rejects with it. */
  #fatal = null
  /** Why the reply stream broke (a protocol error): every call still waiting raises, whatever the policy. */
  #broken = null
  #out = new Float64Array(FIELDS)
  // Calls are encoded into `#outbox` one after the other and written once per tick; written bytes
  // are never overwritten (a call's bytes stay valid for a NOSCRIPT retry).
  #outbox = Buffer.allocUnsafe(OUTBOX_SIZE)
  #sent = 0
  #filled = 0

  constructor(codec, timeoutMs, onEnd, onUnsent) {
    this.#codec = codec
    this.#keyNeeded = codec.needsKey
    this.#timeoutMs = timeoutMs
    this.#onEnd = onEnd
    this.#onUnsent = onUnsent
    const socket = net.connect({ host: codec.host, port: codec.port, noDelay: true })
    this.#socket = socket
    // An idle connection does not keep the process alive; a call in flight does (its timer).
    socket.unref()
    let failure = null
    const connecting = setTimeout(() => {
      if (socket.connecting) socket.destroy(new Error(`connecting timed out after ${timeoutMs} ms`))
    }, timeoutMs).unref()
    socket.once('connect', () => {
      clearTimeout(connecting)
      this.#connected = true
    })
    socket.on('data', (chunk) => this.#read(chunk))
    socket.on('error', (error) => (failure ??= error))
    socket.on('end', () => this.#retire())
    socket.on('close', () => {
      clearTimeout(connecting)
      // A connection that never opened is an outage: the breaker opens and later calls answer at once.
      if (!this.#connected) codec.outage()
      this.#end(failure ? failure.message : 'the connection was closed')
    })
    for (let i = 0; i < codec.preambleReplies; i++) this.#queue.push({ kind: SETUP })
    if (codec.preambleReplies > 0) this.#write(codec.preamble())
    // Calls encoded before the check's replies are read go as EVALSHA, which every server runs.
    for (let i = 0; i < codec.checkReplies; i++) this.#queue.push({ kind: CHECK })
    if (codec.checkReplies > 0) this.#write(codec.checkCommand())
  }

  /** Encodes and sends a call (throws for misuse); resolves to its decision. */
  call(key, parsed, rules, cost, nowMs, spend) {
    const entry = {
      kind: CALL,
      outbox: this.#outbox,
      start: 0,
      end: 0,
      key,
      nowMs,
      spend,
      parsed,
      rules,
      cost,
      retried: false,
      settled: false,
      deadline: 0,
      resolve: null,
      reject: null,
    }
    this.#encode(entry)
    this.#scheduleFlush()
    this.#enqueue(entry)
    return new Promise((resolve, reject) => {
      entry.resolve = resolve
      entry.reject = reject
    })
  }

  /** Encodes `entry`'s call after the outbox's last bytes (throws for misuse) and notes where they lie. */
  #encode(entry) {
    const codec = this.#codec
    const { key, rules, cost, nowMs, spend } = entry
    let start = this.#filled
    let end = codec.encodeInto(key, rules, cost, nowMs, spend, this.#outbox, start)
    if (end < 0) {
      this.#newOutbox(-end)
      start = 0
      end = codec.encodeInto(key, rules, cost, nowMs, spend, this.#outbox, start)
    }
    this.#filled = end
    entry.outbox = this.#outbox
    entry.start = start
    entry.end = end
  }

  /**
   * The module's command was refused without running: the codec encodes EVALSHA from now on, so a
   * fresh encoding of the same call (new bytes, new tag; the refused bytes stay as they were) goes out
   * now, once.
   */
  #resend(entry) {
    try {
      this.#encode(entry)
    } catch (error) {
      this.#settle(entry)
      entry.reject(fromNative(error))
      return
    }
    this.#inFlight--
    this.#enqueue(entry)
    this.flush()
  }

  /** Takes over a call that another connection encoded but never wrote (same bytes, same tag). */
  adopt(entry) {
    const deadline = entry.deadline
    this.#enqueue(entry)
    entry.deadline = deadline // the call keeps its own deadline
    this.#write(entry.outbox.subarray(entry.start, entry.end))
  }

  /**
   * The server closed its side: no new call may use this connection. Calls encoded but not yet
   * written go to a fresh connection; written ones stay to read their replies (or fail at the close).
   */
  #retire() {
    if (this.#retired) return
    this.#retired = true
    this.#onEnd()
    const unsent = []
    const queue = this.#queue
    for (let at = this.#head; at < queue.length; at++) {
      const entry = queue[at]
      if (entry.kind === CALL && !entry.settled && entry.outbox === this.#outbox && entry.start >= this.#sent) {
        unsent.push(entry)
      }
    }
    if (unsent.length === 0) return
    this.#sent = this.#filled
    const moved = new Set(unsent)
    this.#queue = queue.filter((entry, at) => at < this.#head || !moved.has(entry))
    this.#expired = Math.min(this.#expired, this.#queue.length)
    this.#inFlight -= unsent.length
    if (this.#inFlight === 0 && this.#timer !== null) this.#timer.unref()
    this.#onUnsent(unsent)
  }

  #enqueue(entry) {
    entry.deadline = performance.now() + this.#timeoutMs
    this.#queue.push(entry)
    if (++this.#inFlight === 1 && this.#timer !== null) this.#timer.ref()
    this.#timer ??= setTimeout(() => this.#expire(), this.#timeoutMs)
  }

  /** Sends bytes now, after what is waiting in the outbox. */
  #write(bytes) {
    this.flush()
    this.#socket.write(bytes)
  }

  #scheduleFlush() {
    if (!this.#flushing) {
      this.#flushing = true
      process.nextTick(flush, this)
    }
  }

  /** Writes what was encoded since the last flush, in one system call. */
  flush() {
    this.#flushing = false
    if (this.#filled > this.#sent) {
      this.#socket.write(this.#outbox.subarray(this.#sent, this.#filled))
      this.#sent = this.#filled
    }
    if (OUTBOX_SIZE - this.#filled < OUTBOX_SLACK) this.#newOutbox(0)
  }

  /** Flushes, then starts a new outbox with room for at least `size` bytes. */
  #newOutbox(size) {
    if (this.#filled > this.#sent) this.#socket.write(this.#outbox.subarray(this.#sent, this.#filled))
    this.#outbox = Buffer.allocUnsafe(Math.max(OUTBOX_SIZE, size))
    this.#sent = this.#filled = 0
  }

  /** Hands every whole reply that arrived to the entry it answers, in order. */
  #read(chunk) {
    const codec = this.#codec
    codec.push(chunk)
    const queue = this.#queue
    while (this.#head < queue.length) {
      const entry = queue[this.#head]
      if (entry.kind === CALL && !entry.settled) {
        let status
        try {
          status = codec.takeDecision(
            entry.outbox.subarray(entry.start, entry.end),
            this.#keyNeeded ? entry.key : null,
            entry.rules,
            entry.cost,
            entry.spend,
            entry.retried,
            this.#out,
          )
        } catch (error) {
          this.#head++
          this.#settle(entry)
          const typed = fromNative(error)
          entry.reject(typed)
          if (codec.broken) return this.#break(typed)
          continue
        }
        if (status === PENDING) break
        this.#head++
        if (status === DECIDED) {
          this.#settle(entry)
          entry.resolve(decision(this.#out, 0, entry.parsed))
        } else if (status === NO_SCRIPT) {
          // The script did not run: load it and send the same call once more (same connection,
          // pipelined: the load is answered first).
          this.#queue.push({ kind: LOAD })
          this.#write(codec.scriptLoad())
          entry.retried = true
          this.#inFlight--
          this.#enqueue(entry)
          this.#write(entry.outbox.subarray(entry.start, entry.end))
        } else if (status === REFUSED) {
          this.#resend(entry)
        }
      } else {
        let taken
        try {
          taken = entry.kind === CHECK ? codec.takeCheck() : codec.takeReply()
        } catch (error) {
          this.#head++
          const typed = fromNative(error)
          if (codec.broken) return this.#break(typed)
          if (entry.kind === SETUP || entry.kind === CHECK) {
            // A wrong password or db index is no outage: calls raise it whatever `onError` says.
            if (typed.code === 'ERR_RATELOCK_CONFIGURATION') this.#fatal = typed
            return this.#socket.destroy(new Error(`connection setup failed: ${typed.message}`))
          }
          continue // a late reply to a timed-out call, or a failed SCRIPT LOAD: nobody waits for it
        }
        if (!taken) break
        this.#head++
      }
    }
    if (this.#head >= COMPACT_AT && this.#head * 2 >= queue.length) {
      this.#queue = queue.slice(this.#head)
      this.#expired = Math.max(0, this.#expired - this.#head)
      this.#head = 0
    }
  }

  /**
   * The reply stream cannot be read any further (a protocol error): calls not yet written move to a
   * fresh connection, as at a close; calls written on this one can never learn their answer, so each
   * raises a ProtocolError (never the failure policy's answer, and the breaker stays as it is).
   */
  #break(error) {
    this.#broken = error
    this.#retire()
    this.#socket.destroy()
  }

  /** Fails every call past its deadline (its reply is still read, in order, and dropped). */
  #expire() {
    this.#timer = null
    const now = performance.now()
    const queue = this.#queue
    let at = Math.max(this.#expired, this.#head)
    let timedOut = false
    for (; at < queue.length; at++) {
      const entry = queue[at]
      if (entry.kind !== CALL || entry.settled) continue
      if (entry.deadline > now) break
      if (!timedOut) {
        // A call that timed out opens the breaker (before its answer, which the policy then gives).
        timedOut = true
        this.#codec.outage()
      }
      this.#fail(entry, true, '')
    }
    this.#expired = at
    if (at < queue.length) this.#timer = setTimeout(() => this.#expire(), Math.max(1, queue[at].deadline - now))
  }

  /** The connection is gone: every call still waiting fails (none is sent again: it may have run). */
  #end(why) {
    if (this.#ended) return
    this.#ended = true
    this.#onEnd()
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    const queue = this.#queue
    for (let at = this.#head; at < queue.length; at++) {
      const entry = queue[at]
      if (entry.kind === CALL && !entry.settled) this.#fail(entry, false, `connection lost (${why})`)
    }
    this.#queue = []
    this.#head = this.#expired = 0
  }

  /** Settles a call by the failure policy (a degraded decision, or the typed error). */
  #fail(entry, timedOut, why) {
    this.#settle(entry)
    if (this.#fatal !== null) {
      entry.reject(this.#fatal)
      return
    }
    if (this.#broken !== null) {
      entry.reject(new ProtocolError(`the reply stream broke before this call's reply: ${this.#broken.message}`))
      return
    }
    try {
      this.#codec.failInto(entry.key, entry.rules, entry.cost, entry.spend, timedOut, why, this.#out)
    } catch (error) {
      entry.reject(fromNative(error))
      return
    }
    entry.resolve(decision(this.#out, 0, entry.parsed))
  }

  #settle(entry) {
    entry.settled = true
    if (--this.#inFlight === 0 && this.#timer !== null) this.#timer.unref()
  }
}

function flush(link) {
  link.flush()
}

module.exports = { WireClient }
