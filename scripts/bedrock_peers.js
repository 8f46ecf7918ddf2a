#!/usr/bin/env node
// A real Bedrock session between bedrock-protocol's server and client
// (npm, MIT), on jsp-raknet over loopback, recording from inside what each
// side really sent: every game packet's bytes, its batch and whether the
// batch was encrypted; and the connection's key as a key-log line
// (BEDROCK.md section 8). `game --json` on a capture of the run must give
// the same packets, names and bytes.
//
//   node scripts/bedrock_peers.js --version 1.21.90 --port 19400 \
//        --out packets.jsonl --keylog session.keylog [--client-version V] [--ping 1] [--expect-refusal 1] \
//        [--client-pem client.pem] [--server-pem server.pem] [--connect-host 127.0.0.2]
//
// Needs scripts/bedrock-setup.sh (bedrock-protocol and jsp-raknet under
// target/bedrock-node). bedrock-protocol's createClient asks for the native
// RakNet module, which does not build without network: every load of its
// `./rak` is routed to jsp-raknet below.
'use strict'
const fs = require('fs')
const path = require('path')
const Module = require('module')

const args = {}
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1]
const version = args.version || '1.21.90'
// The client's version, when it should differ from the server's (a refusal).
const clientVersion = args['client-version'] || version
const port = Number(args.port || 19400)
// The client's target: the server, or a relay (--connect-host): on the
// server's port number, as jsp-raknet's server checks the port the client
// names in NewIncomingConnection against its own.
const connectHost = args['connect-host'] || '127.0.0.1'
const out = fs.createWriteStream(args.out || 'packets.jsonl')
const root = process.env.BEDROCK_NODE || path.join(__dirname, '..', 'target', 'bedrock-node', 'node_modules')

const load = Module._load
Module._load = function (request, parent, isMain) {
  const m = load.apply(this, arguments)
  if (request === './rak' && parent && parent.filename.includes('bedrock-protocol')) {
    return () => m('jsp-raknet')
  }
  return m
}
const bp = require(path.join(root, 'bedrock-protocol'))
const { Connection } = require(path.join(root, 'bedrock-protocol', 'src', 'connection'))
const [readVarInt] = require(path.join(root, 'protodef')).types.varint

// Every batch a side sends, encrypted or not: its packets without their
// length prefix.
const batches = new Map() // connection -> batches sent
function record (conn, batch, encrypted) {
  const side = conn.constructor.name === 'Client' ? 'client' : 'server'
  const n = batches.get(conn) || 0
  batches.set(conn, n + 1)
  for (const framed of batch.packets) {
    const { size } = readVarInt(framed, 0)
    const data = framed.subarray(size)
    const { value: header } = readVarInt(data, 0)
    const id = header & 0x3ff
    const des = side === 'client' ? server.deserializer : client.deserializer
    let name = null
    try { name = des.parsePacketBuffer(data).data.name } catch (e) { name = null }
    out.write(JSON.stringify({ side, dir: side === 'client' ? 'c2s' : 's2c', batch: n, id, name, encrypted, hex: data.toString('hex') }) + '\n')
  }
}
const sendEncrypted = Connection.prototype.sendEncryptedBatch
Connection.prototype.sendEncryptedBatch = function (batch) {
  record(this, batch, true)
  return sendEncrypted.call(this, batch)
}
const sendDecrypted = Connection.prototype.sendDecryptedBatch
Connection.prototype.sendDecryptedBatch = function (batch) {
  record(this, batch, false)
  return sendDecrypted.call(this, batch)
}

const timer = setTimeout(() => {
  console.error(`bedrock_peers: the session did not finish in 30 s (version ${version})`)
  process.exit(2)
}, 30000)

const server = bp.createServer({ host: '127.0.0.1', port, version, offline: true, raknetBackend: 'jsp-raknet' })
server.on('connect', player => {
  // The server side's private key of this connection (PKCS#8 PEM).
  if (args['server-pem']) fs.writeFileSync(args['server-pem'], player.ecdhKeyPair.privateKey.export({ format: 'pem', type: 'pkcs8' }))
  player.on('join', () => player.write('play_status', { status: 'player_spawn' }))
  player.on('spawn', () => setTimeout(() => player.disconnect('bye from the test server'), 100))
})

let client
setTimeout(() => {
  client = bp.createClient({
    host: connectHost, port, version: clientVersion, offline: true, username: 'Steve', skipPing: !args.ping,
    raknetBackend: 'jsp-raknet', useRaknetWorkers: false
  })
  // The client's private key (SEC1 PEM), and the key with the salt the
  // server's handshake carries.
  if (args['client-pem']) fs.writeFileSync(args['client-pem'], client.ecdhKeyPair.privateKey.export({ format: 'pem', type: 'sec1' }))
  const verify = client.verifyServerHandshake
  client.verifyServerHandshake = function (packet) {
    const material = verify.call(this, packet)
    const claims = JSON.parse(Buffer.from(packet.token.split('.')[1], 'base64url').toString())
    const salt = Buffer.from(claims.salt, 'base64')
    if (args.keylog) fs.appendFileSync(args.keylog, `BEDROCK_SALT_KEY ${salt.toString('hex')} ${material.secretKeyBytes.toString('hex')}\n`)
    return material
  }
  // The player's initialisation (what a client sends once spawned), which
  // makes the server say goodbye.
  client.on('join', () => setTimeout(() => client.write('set_local_player_as_initialized', { runtime_entity_id: 1n }), 100))
  client.on('disconnect', packet => {
    clearTimeout(timer)
    setTimeout(() => {
      out.end(() => {
        console.error(`bedrock_peers: ${version} done: ${JSON.stringify(packet.message || packet)}`)
        process.exit(0)
      })
    }, 300)
  })
  client.on('play_status', p => {
    if (String(p.status).startsWith('failed')) {
      clearTimeout(timer)
      setTimeout(() => out.end(() => { console.error(`bedrock_peers: refused: ${p.status}`); process.exit(args['expect-refusal'] ? 0 : 4) }), 300)
    }
  })
  client.on('close', () => {
    if (!args['expect-refusal']) return
    clearTimeout(timer)
    setTimeout(() => out.end(() => { console.error('bedrock_peers: refused, as expected'); process.exit(0) }), 300)
  })
  client.on('error', e => { console.error('bedrock_peers: client error', e); process.exit(3) })
}, 300)
