'use strict'
// The test kit's Rust binaries driven from Node tests: a binary that prints one line when it is ready,
// then takes commands on its stdin, each answered `ok`, and stops what it started when its stdin closes
// (`fault_proxy`, `sentinel_group`, built by `kitBinaries`).

const assert = require('node:assert/strict')
const { spawn, execFileSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const readline = require('node:readline')

const REPO = path.resolve(__dirname, '../..')

/** Builds the test kit's fault proxy, Sentinel group and checker (a no-op when fresh); their directory. */
function kitBinaries() {
  const bins = ['fault_proxy', 'sentinel_group', 'check_history'].flatMap((bin) => ['--bin', bin])
  execFileSync('cargo', ['build', '--quiet', '-p', 'ratelock-testkit', ...bins], {
    cwd: REPO,
    stdio: 'inherit',
  })
  const meta = JSON.parse(execFileSync('cargo', ['metadata', '--format-version', '1', '--no-deps'], { cwd: REPO }))
  return path.join(meta.target_directory, 'debug')
}

/**
 * A test kit binary driven by commands on its stdin, each answered `ok`; it stops what it started when
 * its stdin closes. `firstLine` holds the words of the line it prints when it is ready. It leads a
 * process group of its own, with what it starts, so that one that does not stop can be killed whole;
 * its stderr (a panic's words) is the test's.
 */
class KitProcess {
  static async start(binaries, name, args) {
    const kit = new this()
    kit.name = name
    kit.process = spawn(path.join(binaries, name), args.map(String), { stdio: ['pipe', 'pipe', 'inherit'], detached: true })
    kit.lines = readline.createInterface({ input: kit.process.stdout })[Symbol.asyncIterator]()
    kit.firstLine = (await kit.#nextLine('being ready')).split(' ')
    return kit
  }

  async command(line) {
    this.process.stdin.write(`${line}\n`)
    assert.equal((await this.#nextLine(line)).trim(), 'ok', `${this.name} answered otherwise to ${line}`)
  }

  async #nextLine(after) {
    const next = await this.lines.next()
    if (next.done) {
      this.kill()
      throw new Error(`${this.name} stopped before answering ${after} (its panic, if any, is above)`)
    }
    return next.value
  }

  /** Closes its stdin and waits for it to stop what it started; after 30 s, kills its group and throws. */
  async stop() {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return
    let timer
    const exited = new Promise((resolve) => this.process.once('exit', () => resolve('exited')))
    const late = new Promise((resolve) => {
      timer = setTimeout(resolve, 30_000, 'late')
    })
    this.process.stdin.end()
    const how = await Promise.race([exited, late])
    clearTimeout(timer)
    if (how === 'late') {
      this.kill()
      throw new Error(`${this.name} did not stop within 30 s of its stdin closing`)
    }
  }

  /** Kills the kit and everything it started (its process group). */
  kill() {
    try {
      process.kill(-this.process.pid, 'SIGKILL')
    } catch (error) {
      if (error.code !== 'ESRCH') throw error // ESRCH: the group is gone already
    }
  }
}

/** The `fault_proxy` process in front of one server (`ports`: its doors). */
class Proxy extends KitProcess {
  get ports() {
    return this.firstLine.slice(1).map(Number)
  }
}

/** The `sentinel_group` process: a master, its replica and three sentinels, reached by `url`. */
class SentinelGroup extends KitProcess {
  get url() {
    return this.firstLine[1]
  }
}

/**
 * A `sentinel_group` started secured: the password `s3cret` on every process, TLS everywhere; `ca` is
 * its CA's PEM text.
 */
class SecuredSentinelGroup extends SentinelGroup {
  static startSecured(binaries) {
    return this.start(binaries, 'sentinel_group', ['secured'])
  }

  get ca() {
    return fs.readFileSync(this.firstLine[3], 'utf8')
  }
}

/**
 * A `sentinel_group` started split: the password `m4ster` on the master and replica (in `url`),
 * `s3ntinel` on the sentinels.
 */
class SplitSentinelGroup extends SentinelGroup {
  static startSplit(binaries) {
    return this.start(binaries, 'sentinel_group', ['split'])
  }
}

module.exports = { kitBinaries, KitProcess, Proxy, SentinelGroup, SecuredSentinelGroup, SplitSentinelGroup }
