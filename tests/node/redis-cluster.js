'use strict'
// Test harness: a real Redis Cluster of three masters (no replicas), each a RedisServer on its own
// free loopback port, joined with `redis-cli --cluster create` (apt-get install -y redis-tools);
// optionally serving TLS too.

const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const { RedisServer, freePort, makeCertificates, tlsArgs } = require('./redis-server')

class RedisCluster {
  /**
   * Starts three cluster-enabled servers, joins them and waits until every slot is served. With `tls`,
   * every node also serves TLS on a port of its own (the cluster bus too), with a certificate for
   * localhost and 127.0.0.1 (the nodes' address in CLUSTER SLOTS) signed by a private CA: `tlsUrl` is
   * the `rediss+cluster://` URL, `caPem` the CA to trust.
   */
  static async start({ tls = false } = {}) {
    const certificates = tls ? makeCertificates('DNS:localhost,IP:127.0.0.1') : null
    const tlsPorts = []
    const nodes = []
    for (let i = 0; i < 3; i++) {
      // An explicit bus port: the default (the port + 10000) does not exist for ports above 55535.
      const clusterArgs = ['--cluster-enabled', 'yes', '--cluster-node-timeout', '2000', '--cluster-port', String(await freePort())]
      if (certificates) {
        tlsPorts.push(await freePort())
        clusterArgs.push(...tlsArgs(certificates, tlsPorts[i]), '--tls-cluster', 'yes')
      }
      nodes.push(await RedisServer.start({ extraArgs: clusterArgs }))
    }
    const addresses = nodes.map((node) => `127.0.0.1:${node.port}`)
    const created = spawnSync('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'])
    if (created.error || created.status !== 0) {
      await Promise.all(nodes.map((node) => node.close()))
      throw new Error(`redis-cli --cluster create failed: ${created.error ?? created.stdout}`)
    }
    const cluster = new RedisCluster(nodes)
    if (certificates) {
      cluster.tlsUrl = `rediss+cluster://${tlsPorts.map((port) => `localhost:${port}`).join(',')}`
      cluster.caPem = fs.readFileSync(path.join(certificates, 'ca.pem'), 'utf8')
      fs.rmSync(certificates, { recursive: true, force: true })
    }
    await cluster.#untilServed()
    return cluster
  }

  constructor(nodes) {
    this.nodes = nodes
    this.url = `redis+cluster://${nodes.map((node) => `127.0.0.1:${node.port}`).join(',')}`
  }

  async #untilServed() {
    const deadline = Date.now() + 30_000
    for (;;) {
      const infos = await Promise.all(this.nodes.map((node) => node.command('CLUSTER', 'INFO')))
      if (infos.every((info) => info.includes('cluster_state:ok') && info.includes('cluster_slots_ok:16384'))) return
      if (Date.now() > deadline) throw new Error('the cluster did not become ready')
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  async close() {
    await Promise.all(this.nodes.map((node) => node.close()))
  }
}

module.exports = { RedisCluster }
