'use strict'
// `Limiter` calls on one `redis://` or `rediss://` server over a socket on this thread (TLS through
// node:tls for `rediss://`): one call is one round trip, with no hop to the addon's runtime and back.
// This file moves bytes and keeps time; the addon's wire codec (the core's `WireConnection`, an
// external value its `wire…` functions take) decides the rest: what to write (the preamble, the module
// check, each call on the connection's route, a retry after NOSCRIPT or a refused module command), what
// each reply means, a call's answer at its timeout or when its connection is lost (the failure policy;
// never sent again: it may have run), setup errors, a broken reply stream and the store's circuit
// breaker (shared with the addon's other paths). Calls are written at the end of the tick that made
// them, or every few calls when a tick makes many (`WRITE_EVERY`). A close the server sends (FIN: an
// idle timeout, CLIENT KILL) retires the connection at once: later calls go out on a fresh one, and
// calls not yet written move to it. So does a call's timeout (the connection may have died without a
// word), and the connection closes once no call waits on it.

const net = require('node:net')
const { performance } = require('node:perf_hooks')
const tls = require('node:tls')

const native = require('./native')
const { InternalError, fromCode, fromNative } = require('./errors')
const { FIELDS, decision } = require('./decision')
const { LONGEST_TIMER_MS } = require('./timers')

/** Numbers per settled call in the addon's answers: its id, decided (1) or failed (0), its decision. */
const SETTLED = 2 + FIELDS
/** What the codec's `...Into` calls answer: a count, and bits for the connection's state after it. */
const { STATUS_COUNT, STATUS_IDLE, STATUS_OUTPUT, STATUS_CLOSE, STATUS_RETIRE } = native
/** A failed call whose error the codec did not hand over: a bug, still raised. */
const UNTOLD = { code: InternalError.code, message: 'a call failed and its error was not handed over (a bug)' }
/**
 * One TLS context per trusted set and client certificate, made at its first connection and shared by
 * every later one in the process: reading Node's bundled roots into a context takes tens of
 * milliseconds on the event loop (47 ms measured), which every new connection would pay again. Keyed by
 * the CA's, the certificate's and the key's PEM text (`null` for the bundled roots, or for no client
 * certificate). An entry lives as long as the process: one per distinct choice a store was given (a
 * rotated CA or certificate adds one).
 */
const secureContexts = new Map()

function secureContextFor(tlsRootCa, tlsClientCert, tlsClientKey) {
  const text = (pem) => (pem == null ? null : String(pem))
  const key = JSON.stringify([text(tlsRootCa), text(tlsClientCert), text(tlsClientKey)])
  let context = secureContexts.get(key)
  if (context === undefined) {
    const ca = tlsRootCa == null ? tls.rootCertificates : tlsRootCa
    const client = tlsClientCert == null ? {} : { cert: tlsClientCert, key: tlsClientKey }
    context = tls.createSecureContext({ ca, ...client })
    secureContexts.set(key, context)
  }
  return context
}

/** Settled calls one crossing hands over at most (`drainInto` gives the rest). */
const BATCH = 256
/**
 * Calls submitted in one tick go out in writes of this many, the last at the tick's end. Writing only
 * at the end held the server idle while this thread made a tick's calls, then this thread idle while
 * the server ran them: 100 concurrent hits ran at 61-64k/s on one Lua server, 80-82k/s with writes of
 * 32 and 88-92k/s with writes of 8 (130-159k/s, then 218-255k/s, with the module loaded).
 */
const WRITE_EVERY = 8

class WireClient {
  #limiter
  #url
  #timeoutMs
  #link = null
  /** The connection the next link uses: `{ codec, host, port, tls, tlsRootCa, tlsClientCert,
   * tlsClientKey }` (a new one per connection). */
  #opened
  #openedUsed = false
  /** Decisions from the addon (every codec of this client writes here): one at the start (a call
   * answered at once), or a batch of settled calls. */
  out
  /** The calls waiting for their answer, by id. */
  #waiting = new Map()
  #nextId = 0

  /** A client for `url` if it is one `redis://` or `rediss://` server (else `null`: use the runtime). */
  static open(limiter, url, timeoutMs) {
    const out = new Float64Array(SETTLED * BATCH)
    const opened = native.openWire(limiter, url, out)
    return opened === null ? null : new WireClient(limiter, url, timeoutMs, opened, out)
  }

  constructor(limiter, url, timeoutMs, opened, out) {
    this.#limiter = limiter
    this.#url = url
    this.#timeoutMs = timeoutMs
    this.#opened = opened
    this.out = out
  }

  /** `hit` (spend) or `peek` of prepared rules `parsed`; resolves to the decision. */
  call(key, parsed, cost, nowMs, spend) {
    try {
      let link = this.#link
      // Admitted by the breaker here when a connection is opened for it (the submit asks otherwise).
      const admitted = link === null
      if (admitted) {
        // No connection (yet, or any more): while the breaker is open, answer without opening one.
        if (!native.wireAdmit(this.#opened.codec)) {
          native.wireRefusedInto(this.#opened.codec, key, parsed.rules, cost, spend)
          return Promise.resolve(decision(this.out, 0, parsed))
        }
        link = this.#connect()
      }
      const id = this.#nextId
      this.#nextId = (id + 1) & 0x7fffffff
      if (link.submit(id, key, parsed.rules, cost, nowMs, spend, admitted)) {
        return Promise.resolve(decision(this.out, 0, parsed))
      }
      return new Promise((resolve, reject) => this.#waiting.set(id, { resolve, reject, parsed }))
    } catch (error) {
      return Promise.reject(fromNative(error))
    }
  }

  /** Hands the `count` settled calls in `out` to their promises (failures' errors from `codec`). */
  settle(codec, count) {
    const out = this.out
    for (let i = 0, at = 0; i < count; i++, at += SETTLED) {
      const id = out[at]
      const waiting = this.#waiting.get(id)
      this.#waiting.delete(id)
      if (out[at + 1] === 1) {
        waiting?.resolve(decision(out, at + 2, waiting.parsed))
      } else {
        const failure = native.wireTakeFailure(codec) ?? UNTOLD
        waiting?.reject(fromCode(failure.code, failure.message))
      }
    }
    return count
  }

  #connect() {
    // A new connection starts with a new codec.
    if (this.#openedUsed) this.#opened = native.openWire(this.#limiter, this.#url, this.out)
    this.#openedUsed = true
    const link = new Link(
      this.#opened,
      this,
      this.#timeoutMs,
      () => {
        if (this.#link === link) this.#link = null
      },
      (unsent) => (this.#link ?? this.#connect()).adopt(unsent),
    )
    this.#link = link
    return link
  }
}

/** One connection: its socket, its codec, its timer. */
class Link {
  #codec
  #client
  #socket
  #timeoutMs
  #onEnd
  #onUnsent
  #timer = null
  /** The deadlines' check queued by a timer that fired, to run after the loop's next reads. */
  #checking = null
  #flushing = false
  #unwritten = 0
  /** Whether this is a TLS socket, whose writes after the first wait for the server's first answer. */
  #secure
  /** Whether the server has answered anything on this socket yet. */
  #heard = false
  /** Whether writes wait for that first answer (TLS, after the first write), and whether one waits. */
  #holding = false
  #held = false
  #connected = false
  #retired = false
  #ended = false

  constructor({ codec, host, port, tls: secure, tlsRootCa, tlsClientCert, tlsClientKey }, client, timeoutMs, onEnd, onUnsent) {
    this.#codec = codec
    this.#client = client
    this.#timeoutMs = timeoutMs
    this.#onEnd = onEnd
    this.#onUnsent = onUnsent
    this.#secure = secure
    // TLS always verifies (whatever NODE_TLS_REJECT_UNAUTHORIZED says: only a URL's #insecure turns
    // verification off, and such a URL stays on the runtime) the certificate against the store's CA,
    // else Node's bundled public roots alone (Mozilla's set, as the runtime's rustls trusts; not
    // NODE_EXTRA_CA_CERTS nor the system store, so a limiter and a lock on one URL trust the same), and
    // its name against the host (an address is checked as one, with no SNI); it presents the store's client
    // certificate when one was given. A refusal's words name the certificate, which the codec reads as a
    // configuration error.
    const socket = secure
      ? tls
          .connect({
            host,
            port,
            servername: net.isIP(host) ? undefined : host,
            secureContext: secureContextFor(tlsRootCa, tlsClientCert, tlsClientKey),
            rejectUnauthorized: true,
            checkServerIdentity: tls.checkServerIdentity,
          })
          .setNoDelay(true)
      : net.connect({ host, port, noDelay: true })
    this.#socket = socket
    // An idle connection does not keep the process alive; a call in flight does (its timer).
    socket.unref()
    let failure = null
    // Checked after the loop's next reads, as the calls' deadlines are (see `deadlineDue`).
    const connecting = setTimeout(() => setImmediate(() => {
      if (this.#connected || socket.destroyed) return
      // A TLS socket stops `connecting` once its TCP connection opens, before the handshake. A port
      // that serves plain Redis takes the TLS hello for a command and waits for its end.
      const stalled = secure && !socket.connecting ? ': the TCP connection opened but the TLS handshake got no answer (does this port serve TLS?)' : ''
      const why = `connecting timed out after ${timeoutMs} ms${stalled}`
      // Ended now, not at the socket's 'close' (a later turn of the loop): the calls waiting on it,
      // whose deadlines fall in the same turn, learn why, and that nothing was sent.
      this.#end(why)
      socket.destroy(new Error(why))
    }), Math.min(timeoutMs, LONGEST_TIMER_MS)).unref()
    socket.once(secure ? 'secureConnect' : 'connect', () => {
      clearTimeout(connecting)
      this.#connected = true
    })
    socket.on('data', (chunk) => this.#read(chunk))
    socket.on('error', (error) => (failure ??= error))
    // A TLS server that has answered nothing yet and closes may be refusing the client (its alert comes
    // as the socket's error): the calls wait for the close, which says why. Unless the server refuses
    // every connection alike, the calls never written then go once to a fresh connection, as at an end.
    socket.on('end', () => {
      if (!this.#secure || this.#heard) this.#retire()
    })
    socket.on('close', () => {
      clearTimeout(connecting)
      const why = failure ? failure.message : 'the connection was closed'
      if (this.#secure && !this.#heard && this.#connected && !native.wireRefusesEveryConnection(why)) this.#retire()
      this.#end(why)
    })
    // The preamble and the module check go first (the socket holds them until it connects).
    this.#write()
  }

  /** Submits call `id` (`admitted`: the breaker let it through already); true when it was answered
   * at once (its decision in the client's `out`): a hook answered it, or the circuit breaker refused it. */
  submit(id, key, rules, cost, nowMs, spend, admitted) {
    const deadline = performance.now() + this.#timeoutMs
    if (native.wireSubmitInto(this.#codec, id, key, rules, cost, nowMs, spend, deadline, admitted)) return true
    if (++this.#unwritten >= WRITE_EVERY) this.#write()
    else this.#scheduleFlush()
    this.#arm()
    return false
  }

  /** Takes over calls another connection never wrote (same bytes, same deadlines). */
  adopt(unsent) {
    native.wireAdopt(this.#codec, unsent)
    this.#write()
    // Their deadlines are the ones they were submitted with, sooner than a new call's.
    this.#disarm()
    this.#armAt(native.wireNextDeadline(this.#codec), performance.now())
  }

  #scheduleFlush() {
    if (!this.#flushing) {
      this.#flushing = true
      process.nextTick(flush, this)
    }
  }

  /** The tick's end: writes what the codec has for the socket. */
  flush() {
    this.#flushing = false
    this.#write()
  }

  /** Writes what the codec has for the socket, in one system call (the tick's flush stays scheduled). */
  #write() {
    this.#unwritten = 0
    if (this.#holding) {
      this.#held = true
      return
    }
    const bytes = native.wireTakeOutput(this.#codec)
    if (bytes === null) return
    this.#socket.write(bytes)
    // Over TLS, what follows the first bytes (the preamble) waits for the server's first answer: a
    // server that refuses the client's want of a certificate (tls-auth-clients) sends its alert after
    // the handshake, and a second write meeting the closed connection would fail first (ECONNRESET),
    // hiding the alert, a configuration error, behind what reads as an outage.
    if (this.#secure && !this.#heard) this.#holding = true
  }

  /** A timer for the earliest deadline, keeping the process alive while a call waits. */
  #arm() {
    if (this.#timer === null) this.#timer = setTimeout(deadlineDue, Math.min(this.#timeoutMs, LONGEST_TIMER_MS), this)
    else this.#timer.ref()
  }

  /** A timer for `deadline` (ms on `performance.now()`'s clock, `null`: none) seen at `now`. */
  #armAt(deadline, now) {
    if (deadline === null) return
    this.#timer = setTimeout(deadlineDue, Math.min(Math.max(1, deadline - now), LONGEST_TIMER_MS), this)
  }

  /**
   * A deadline timer fired: the check runs after the loop's next reads. Node runs timers before it
   * reads sockets, so a thread blocked past a call's timeout (a long synchronous task, a GC pause)
   * timed out calls whose replies were already waiting, and opened the store's breaker on a server
   * that answered in a millisecond.
   */
  deadlineDue() {
    this.#checking = setImmediate(expire, this)
  }

  /** No deadline timer, and no check queued by one. */
  #disarm() {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    if (this.#checking !== null) clearImmediate(this.#checking)
    this.#checking = null
  }

  /** Settles the calls a codec answer (`status`: a count and the `STATUS_*` bits) says it wrote, and
   * what it still holds; answers the status of the last crossing. */
  #settle(status) {
    const client = this.#client
    while (client.settle(this.#codec, status & STATUS_COUNT) === BATCH) status = native.wireDrainInto(this.#codec)
    if (this.#timer !== null && status & STATUS_IDLE) this.#timer.unref()
    return status
  }

  #read(chunk) {
    if (!this.#heard) {
      this.#heard = true
      this.#holding = false
      if (this.#held) {
        this.#held = false
        this.#scheduleFlush()
      }
    }
    const codec = this.#codec
    const status = this.#settle(native.wireFeedInto(codec, chunk, performance.now()))
    if (status & STATUS_CLOSE) {
      // Calls not yet written move to a fresh connection when the stream broke; the written ones
      // learn their answer when the socket has closed.
      if (native.wireBroken(codec)) this.#retire()
      this.#socket.destroy(new Error(native.wireCloseReason(codec)))
      return
    }
    if (status & STATUS_OUTPUT) this.#write() // a retry after NOSCRIPT or a refused module command
    if (this.#retired && status & STATUS_IDLE) this.#socket.destroy() // its last awaited reply came
  }

  /** The deadlines' check (see `deadlineDue`). */
  expire() {
    this.#timer = null
    this.#checking = null
    if (this.#ended) return
    const now = performance.now()
    let status = this.#settle(native.wireExpireInto(this.#codec, now))
    // A call timed out: the connection may have died without a word (no FIN, no RST), so it is given
    // up. Later calls, and those it holds unwritten, go out on a fresh one; it closes once no call waits.
    if (status & STATUS_RETIRE && !this.#retired) status = this.#retire()
    if (this.#retired && status & STATUS_IDLE) {
      this.#socket.destroy()
      return
    }
    this.#armAt(native.wireNextDeadline(this.#codec), now)
  }

  /** The server closed its side, the stream broke or a call timed out: later calls go to a fresh
   * connection. Answers the codec's status after it. */
  #retire() {
    if (this.#retired) return 0
    this.#retired = true
    this.#onEnd()
    const unsent = native.wireRetire(this.#codec)
    const status = this.#settle(native.wireDrainInto(this.#codec)) // calls that cannot go out again
    if (unsent !== null) this.#onUnsent(unsent)
    return status
  }

  /** The connection is gone: every call still waiting is answered. */
  #end(why) {
    if (this.#ended) return
    this.#ended = true
    this.#onEnd()
    this.#disarm()
    this.#settle(native.wireClosedInto(this.#codec, this.#connected, why))
  }
}

function flush(link) {
  link.flush()
}

function deadlineDue(link) {
  link.deadlineDue()
}

function expire(link) {
  link.expire()
}

module.exports = { WireClient }
