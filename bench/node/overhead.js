'use strict'
// Client overhead and tails, computed as bench/python/overhead.py computes them: each call timed
// right after a PING over a bare socket (interleaved, so both see the same machine at the same
// moment), and the server's µs per call from INFO commandstats over the same loop, counting only the
// commands the client sent (a short MONITOR sample tells them from the commands a script ran).
//
//   overhead(p) = call latency at p − round trips × PING latency at p − server µs per call
//
// A call of several round trips (a lock's acquire and release) passes `roundTrips`: each of its round
// trips costs one PING's time at least.

const net = require('node:net')

const CALLS = 20_000 // pairs per path, unless the time bound ends the loop first
const SECONDS = 4
const WARMUP_CALLS = 2_000
const MONITOR_CALLS = 200
const LADDER = [0.5, 0.9, 0.99, 0.999]
const BANDS_US = [50, 100, 200, 400, 800] // band edges; the last band is "above 800 µs"
const NOT_SERVER_WORK = new Set(['ping', 'config|resetstat', 'config', 'info'])

/** A bare RESP socket: the PING floor, the stats commands and the MONITOR sample. */
class RawConnection {
  static async open(port) {
    const socket = net.createConnection({ host: '127.0.0.1', port, noDelay: true })
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
    return new RawConnection(socket)
  }

  constructor(socket) {
    this.socket = socket
    this.buffer = Buffer.alloc(0)
    this.waiting = null
    socket.on('data', (chunk) => {
      this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk
      if (this.waiting) this.waiting()
    })
  }

  /** Resolves once the buffer holds what `complete` accepts, and takes it. */
  async read(complete) {
    for (;;) {
      const length = complete(this.buffer)
      if (length > 0) {
        const reply = this.buffer.subarray(0, length)
        this.buffer = this.buffer.subarray(length)
        return reply
      }
      await new Promise((resolve) => { this.waiting = resolve })
      this.waiting = null
    }
  }

  async ping() {
    this.socket.write('PING\r\n')
    const reply = await this.read((buffer) => (buffer.length >= 7 ? 7 : 0))
    if (reply.toString() !== '+PONG\r\n') throw new Error(`PING answered ${reply}`)
  }

  /** Sends one command; returns its reply: a status line, or one bulk string's content. */
  async command(...words) {
    this.socket.write(`*${words.length}\r\n${words.map((word) => `$${Buffer.byteLength(word)}\r\n${word}\r\n`).join('')}`)
    const reply = await this.read((buffer) => {
      const line = buffer.indexOf('\r\n')
      if (line < 0) return 0
      if (buffer[0] !== 0x24) return line + 2 // '$'
      const end = line + 2 + Number(buffer.subarray(1, line).toString()) + 2
      return buffer.length >= end ? end : 0
    })
    if (reply[0] === 0x2d) throw new Error(`${words.join(' ')} answered ${reply}`) // '-'
    if (reply[0] !== 0x24) return reply.toString()
    const line = reply.indexOf('\r\n')
    return reply.subarray(line + 2, reply.length - 2).toString()
  }

  /** Each command's usec since the last reset, from INFO commandstats. */
  async serverUsec() {
    const stats = new Map()
    for (const line of (await this.command('INFO', 'commandstats')).split('\r\n')) {
      const match = /^cmdstat_([^:]+):.*usec=(\d+),/.exec(line)
      if (match) stats.set(match[1], Number(match[2]))
    }
    return stats
  }

  close() {
    this.socket.destroy()
  }
}

/** For each command MONITOR saw during MONITOR_CALLS calls, the share of its runs the client sent. */
async function sentShares(call, port) {
  const monitor = await RawConnection.open(port)
  const marker = await RawConnection.open(port)
  try {
    if ((await monitor.command('MONITOR')) !== '+OK\r\n') throw new Error('MONITOR did not answer +OK')
    for (let i = 0; i < MONITOR_CALLS; i++) await call()
    await marker.command('ECHO', 'end of sample') // seen last: all the calls' lines came before it
    const text = (await monitor.read((buffer) => {
      const end = buffer.indexOf('"ECHO" "end of sample"')
      return end < 0 ? 0 : end
    })).toString()
    const sent = new Map()
    const seen = new Map()
    for (const line of text.split('\r\n')) {
      const match = /\[[^\]]*?( lua)?\] "([^"]+)"/.exec(line)
      if (!match) continue
      const name = match[2].toLowerCase()
      seen.set(name, (seen.get(name) ?? 0) + 1)
      if (!match[1]) sent.set(name, (sent.get(name) ?? 0) + 1)
    }
    return new Map([...seen].map(([name, count]) => [name, (sent.get(name) ?? 0) / count]))
  } finally {
    monitor.close()
    marker.close()
  }
}

const percentileUs = (sorted, fraction) => sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] / 1000

/** One path's call latencies, the PING latencies interleaved with them, and its server µs per call. */
class Tails {
  constructor(name, callsNs, pingsNs, serverUs, roundTrips) {
    this.name = name
    this.calls = Float64Array.from(callsNs).sort()
    this.pings = Float64Array.from(pingsNs).sort()
    this.serverUs = serverUs
    this.roundTrips = roundTrips
  }

  callUs(fraction) { return percentileUs(this.calls, fraction) }

  pingUs(fraction) { return percentileUs(this.pings, fraction) }

  /** The client's own µs at `fraction`: the call less its round trips and the server's work. */
  overheadUs(fraction) { return this.callUs(fraction) - this.roundTrips * this.pingUs(fraction) - this.serverUs }

  /** The share of calls in each band of BANDS_US, and one more above the last edge. */
  bandShares() {
    const counts = new Array(BANDS_US.length + 1).fill(0)
    for (const ns of this.calls) {
      const band = BANDS_US.findIndex((edge) => ns / 1000 <= edge)
      counts[band < 0 ? BANDS_US.length : band]++
    }
    return counts.map((count) => count / this.calls.length)
  }
}

/** Times CALLS calls of `call` (each `roundTrips` round trips long), each right after a raw PING, and
 * reads the server's µs for them. */
async function measure(name, call, port, roundTrips = 1) {
  const floor = await RawConnection.open(port)
  const stats = await RawConnection.open(port)
  try {
    for (let i = 0; i < WARMUP_CALLS; i++) {
      await floor.ping()
      await call()
    }
    const shares = await sentShares(call, port)
    await stats.command('CONFIG', 'RESETSTAT')
    const calls = []
    const pings = []
    const deadline = process.hrtime.bigint() + BigInt(SECONDS * 1e9)
    while (calls.length < CALLS) {
      const before = process.hrtime.bigint()
      await floor.ping()
      const middle = process.hrtime.bigint()
      await call()
      const after = process.hrtime.bigint()
      pings.push(Number(middle - before))
      calls.push(Number(after - middle))
      if (after > deadline) break
    }
    let usec = 0
    // A command the sample never saw is rare enough to count whole, as the client's.
    for (const [command, spent] of await stats.serverUsec()) {
      if (!NOT_SERVER_WORK.has(command)) usec += spent * (shares.get(command.split('|')[0]) ?? 1)
    }
    return new Tails(name, calls, pings, usec / calls.length, roundTrips)
  } finally {
    floor.close()
    stats.close()
  }
}

function ladderHeader() {
  const bands = [...BANDS_US.map((edge) => `≤${edge}`), `>${BANDS_US[BANDS_US.length - 1]}`]
  return ['path', ...LADDER.map((fraction) => `p${+(fraction * 100).toFixed(1)}`), 'max', 'PING p50', 'PING p99', 'server',
    'overhead p50', 'overhead p99', ...bands.map((band) => `${band} µs`)]
}

/** One markdown row: the call's ladder, the PING's p50/p99, the server µs, the overhead and the bands. */
function ladderRow(tails) {
  return [
    tails.name,
    ...LADDER.map((fraction) => tails.callUs(fraction).toFixed(1)),
    (tails.calls[tails.calls.length - 1] / 1000).toFixed(0),
    tails.pingUs(0.5).toFixed(1), tails.pingUs(0.99).toFixed(1), tails.serverUs.toFixed(1),
    tails.overheadUs(0.5).toFixed(1), tails.overheadUs(0.99).toFixed(1),
    ...tails.bandShares().map((share) => `${(share * 100).toFixed(1)}%`),
  ]
}

/** The markdown table of every measured path. */
function ladderTable(measured) {
  const header = ladderHeader()
  return [
    `| ${header.join(' | ')} |`,
    `|:--|${'--:|'.repeat(header.length - 1)}`,
    ...measured.map((tails) => `| ${ladderRow(tails).join(' | ')} |`),
  ]
}

module.exports = { measure, ladderTable, RawConnection }
