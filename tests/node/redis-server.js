'use strict'
// Test harness: a real redis-server on a free loopback port, stopped by PID; never a mock, never
// skipped (install it: apt-get install -y redis-server).

const { spawn, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')

/**
 * A private CA and a server certificate for `names` (a subjectAltName list, e.g. `DNS:localhost`)
 * signed by it, made with openssl in a fresh directory (returned): `ca.pem`, `cert.pem`, `key.pem`, and a
 * client certificate the CA signed, `client.pem` and `client.key` (for `tlsClientCert`, `tlsClientKey`).
 */
function makeCertificates(names) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ratelock-node-tls-'))
  const openssl = (...args) => {
    const made = spawnSync('openssl', args, { cwd: dir, stdio: 'ignore' })
    if (made.error || made.status !== 0) throw new Error(`openssl ${args.join(' ')} failed (apt-get install -y openssl)`)
  }
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=ratelock test CA', '-keyout', 'ca.key', '-out', 'ca.pem')
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', 'key.pem', '-out', 'server.csr')
  fs.writeFileSync(path.join(dir, 'san.ext'), `subjectAltName=${names}\nbasicConstraints=CA:FALSE\n`)
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1',
    '-extfile', 'san.ext', '-out', 'cert.pem')
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=ratelock client', '-keyout', 'client.key', '-out', 'client.csr')
  fs.writeFileSync(path.join(dir, 'client.ext'), 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n')
  openssl('x509', '-req', '-in', 'client.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1',
    '-extfile', 'client.ext', '-out', 'client.pem')
  return dir
}

/**
 * redis-server arguments that serve TLS on `tlsPort` with the certificates in `dir`; with `askClients`,
 * every client must present a certificate of its own (Redis's default).
 */
function tlsArgs(dir, tlsPort, askClients = false) {
  return ['--tls-port', String(tlsPort), '--tls-cert-file', path.join(dir, 'cert.pem'), '--tls-key-file',
    path.join(dir, 'key.pem'), '--tls-ca-cert-file', path.join(dir, 'ca.pem'), '--tls-auth-clients',
    askClients ? 'yes' : 'no']
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/**
 * Whether process `pid` listens on 127.0.0.1:`port`, as the kernel says (/proc/net/tcp against the
 * process's sockets). A connect is no proof: a port picked free can be taken by another server before
 * ours binds it (ours exits, and a connect reaches the other), and a connect to a port nobody listens
 * on yet can connect to itself.
 */
function listens(pid, port) {
  const address = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`
  // Columns: sl, local_address, rem_address, st (0A: listening), …, inode (the tenth).
  const inodes = fs
    .readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((columns) => columns.length > 9 && columns[1] === address && columns[3] === '0A')
    .map((columns) => `socket:[${columns[9]}]`)
  if (inodes.length === 0) return false
  let fds = []
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`)
  } catch {
    return false
  }
  return fds.some((fd) => {
    try {
      return inodes.includes(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))
    } catch {
      return false
    }
  })
}

class RedisServer {
  /**
   * Starts a server; `password` sets `requirepass` (then `url` carries it and `command` uses it),
   * `loadModule` is a module's path for `--loadmodule` (see redis-module.js), and `extraArgs` are
   * passed to redis-server as they are.
   */
  static async start({ password, loadModule, extraArgs = [] } = {}) {
    if (spawnSync('redis-server', ['--version']).error) {
      throw new Error('redis-server is required: apt-get install -y redis-server')
    }
    const args = loadModule ? ['--loadmodule', loadModule, ...extraArgs] : extraArgs
    for (let attempt = 0; attempt < 5; attempt++) {
      const server = new RedisServer(await freePort(), password, args)
      if (await server.#spawn()) return server
      // Another server took the port before ours bound it: a new port.
      await server.close()
    }
    throw new Error('could not start redis-server on a free port after 5 attempts')
  }

  /**
   * Starts a server that also listens for TLS, with a certificate for the name localhost (not for the
   * address 127.0.0.1: a URL naming the address meets a certificate that does not name it) signed by a
   * private CA made here (openssl): `tlsUrl` is its `rediss://` URL, `caPem` the CA to trust,
   * `clientCertPem` and `clientKeyPem` a client certificate that CA signed.
   */
  static async startWithTls({ askClients = false, protocols } = {}) {
    const dir = makeCertificates('DNS:localhost')
    const tlsPort = await freePort()
    const versions = protocols ? ['--tls-protocols', protocols] : []
    const server = await RedisServer.start({ extraArgs: [...tlsArgs(dir, tlsPort, askClients), ...versions] })
    server.tlsUrl = `rediss://localhost:${tlsPort}/`
    server.tlsPort = tlsPort
    server.caPem = fs.readFileSync(path.join(dir, 'ca.pem'), 'utf8')
    server.clientCertPem = fs.readFileSync(path.join(dir, 'client.pem'), 'utf8')
    server.clientKeyPem = fs.readFileSync(path.join(dir, 'client.key'), 'utf8')
    fs.rmSync(dir, { recursive: true, force: true })
    return server
  }

  #process = null
  #dir
  #password
  #extraArgs

  constructor(port, password, extraArgs) {
    this.port = port
    this.#password = password
    this.#extraArgs = extraArgs
    this.url = password ? `redis://:${encodeURIComponent(password)}@127.0.0.1:${port}/` : `redis://127.0.0.1:${port}/`
    this.#dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ratelock-node-redis-'))
  }

  async #spawn() {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
    args.push('--enable-debug-command', 'yes', '--dir', this.#dir)
    if (this.#password) args.push('--requirepass', this.#password)
    args.push(...this.#extraArgs)
    const child = spawn('redis-server', args, { stdio: 'ignore' })
    this.#process = child
    const deadline = Date.now() + 10_000
    while (!listens(child.pid, this.port)) {
      if (child.exitCode !== null || child.signalCode !== null) return false
      if (Date.now() > deadline) throw new Error(`redis-server did not start on port ${this.port}`)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    return true
  }

  /** Sends one command with redis-cli and returns its output (e.g. DEBUG SLEEP runs in the background). */
  command(...words) {
    const auth = this.#password ? ['-a', this.#password, '--no-auth-warning'] : []
    const child = spawn('redis-cli', ['-p', String(this.port), ...auth, ...words], { stdio: ['ignore', 'pipe', 'ignore'] })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    return new Promise((resolve) => child.on('close', () => resolve(output.trim())))
  }

  /**
   * Starts the server again on its port after `stop()` (empty: no persistence). The port
   * may be held for a moment (a client's connection to itself on a freed port): it tries for 10 s, as
   * the Rust test kit does.
   */
  async startAgain() {
    const deadline = Date.now() + 10_000
    while (!(await this.#spawn())) {
      if (Date.now() > deadline) throw new Error(`redis-server could not start again on port ${this.port}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  /** Freezes the server (SIGSTOP): connections stay open, nothing is answered. */
  pause() {
    process.kill(this.#process.pid, 'SIGSTOP')
  }

  /** Lets a paused server run again (SIGCONT). */
  resume() {
    process.kill(this.#process.pid, 'SIGCONT')
  }

  /**
   * Stops the server (`how`: 'SIGTERM' lets it finish the calls in flight; 'SIGKILL' cuts them off);
   * `startAgain` may follow.
   */
  async stop(how = 'SIGTERM') {
    const child = this.#process
    this.#process = null
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      process.kill(child.pid, 'SIGCONT')
      process.kill(child.pid, how)
      await exited
    }
  }

  async restart() {
    await this.stop()
    await this.startAgain()
  }

  async close() {
    await this.stop()
    fs.rmSync(this.#dir, { recursive: true, force: true })
  }
}

module.exports = { RedisServer, freePort, makeCertificates, tlsArgs }
