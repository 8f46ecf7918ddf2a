#!/usr/bin/env node
// A real Bedrock session between bedrock-protocol's server and client (npm,
// MIT) on jsp-raknet over loopback, recording from inside what each side
// really sent: every game packet's bytes, its batch and whether the batch was
// encrypted; and the connection's key as a key-log line (docs/bedrock-protocol.md
// section 8). `raknet-dissect game --json` on a capture of the run must give
// the same packets, names and bytes.
//
//   node scripts/bedrock_peers.js --version 1.26.45 --port 19470 \
//        --out packets.jsonl --keylog session.keylog [--username Steve] [--timeout 20] [--skin bp|classic] \
//        [--client-version V] [--ping 1] [--expect-refusal 1] \
//        [--client-pem client.pem] [--server-pem server.pem] [--connect-host 127.0.0.2] \
//        [--play N] [--world 1] [--every SEED] [--server-only 1] [--client-only 1]
//        [--received FILE] [--silent-moves 1] [--transfer HOST:PORT] [--burst N]
//
// The session (the spawn sequence of bedrock-protocol's own examples and
// tests, examples/server/server.js and test/internal.js, less what they
// replay from dumps of a vanilla server; every packet is built from
// minecraft-data's schema for the version, zero values plus the fields set
// below):
//   1.19.30+: c request_network_settings, s network_settings (neither
//             compressed); c login, s server_to_client_handshake
//   before:   c login, s network_settings (bedrock-protocol's server sends
//             it there too: the threshold alone), s server_to_client_handshake
//   (the login and the handshake are the last clear batch each way)
//   c client_to_server_handshake (the first encrypted client batch),
//   s play_status login_success, s resource_packs_info,
//   c resource_pack_client_response, s resource_pack_stack,
//   c resource_pack_client_response, c client_cache_status (+ tick_sync up
//   to 1.20.80), s start_game + item_registry (1.21.60+) or item_component
//   + set_time + set_difficulty + set_commands_enabled (one batch),
//   c request_chunk_radius, s chunk_radius_update, s play_status player_spawn,
//   c set_local_player_as_initialized,
//   with --play N (gameplay, for benchmarks): N rounds of c move_player,
//   s level_chunk (a chunk column at the player's position, an 8 KB payload
//   of short runs from a fixed seed: about 2.5:1 under DEFLATE, like real
//   terrain)
//   + move_entity,
//   with --world 1 (the schema decoder's tests): before the echo, the server
//   sends a world's worth of packets: add_player, available_commands,
//   inventory_content and level_chunk with values set, then one of every
//   other packet the version has, zero-valued (those the client acts on,
//   the login's and transfer, left out),
//   with --every SEED (the schema decoder's tests, random values; not with
//   --world): with its chat the client queues one of every packet type of
//   its version with random values (scripts/bedrock_random.js, seed
//   SEED + 1; left out, NOT_EVERY_CLIENT: the login's, disconnect, and those
//   bedrock-protocol's server or the server here acts on), and on the chat
//   the server one of every type of its version (seed SEED; left out what
//   --world leaves out); only packets that bedrock-protocol writes, reads
//   back and rewrites to the same bytes. The server's echo and the client's
//   disconnect are queued behind them, so that every one arrives (exit 5
//   if one does not),
//   c text (chat), s text (the chat echoed),
//   c disconnect; then the client closes its RakNet connection (0x15).
// The exact batching of the client's queued packets depends on timing.
//
// Output, --out: NDJSON, one object per game packet that went to RakNet, in
// the order the two sides sent them:
//   {"side":"client"|"server","dir":"c2s"|"s2c","batch":N,"name":"...","id":N,
//    "hex":"...","encrypted":bool,"received":bool}
// side: the sender; batch: the index of the 0xFE message in its direction
// (0-based, only batches handed to RakNet count); hex: the packet as it was
// serialised, header varint included, no length prefix (the decompressed,
// decrypted bytes); id: header & 0x3ff; name: minecraft-data's name for the
// id in the sender's version; received: the peer's bedrock-protocol got the
// same bytes as packet k of its batch N in that direction (recorded inside
// its decoder), false if it never got it (e.g. after the peer had closed).
// --keylog: `BEDROCK_SALT_KEY <salt hex> <key hex>`, the salt of the
// ServerToClientHandshake JWT and the key bedrock-protocol derived
// (SHA-256(salt || ECDH secret)), taken from the client's key exchange and
// checked against the server's; --server-only: `BEDROCK_KEY <key hex>`, the
// server's side of it (a proxy between them has a key for each leg).
//
// Exit status: 0 when the session ran to the client's disconnect (or, with
// --expect-refusal, to the server's refusal); 2 when the login did not
// complete within --timeout seconds (or the session within twice that);
// 3 on an error (bedrock-protocol's client, or an exception); 4 when the
// server refused the client, or a side closed before the client's
// disconnect; 5 when a side received other bytes than the other sent, or
// the two sides' keys differ, or (--every) a packet sent was not received.
//
// Needs scripts/bedrock-setup.sh (bedrock-protocol and jsp-raknet under
// target/bedrock-node, installed with --ignore-scripts).
//
// What is patched, at load time (node_modules is not changed): bedrock-protocol
// loads its RakNet glue as `require('./rak')(backend)`; src/createClient.js
// does so at module load with the backend 'raknet-native', whose native
// addon is not built (its install script would download or compile it, which
// needs the network), so requiring bedrock-protocol at all throws. Every load
// of bedrock-protocol's `./rak` is therefore wrapped so that any backend it
// asks for is jsp-raknet (pure JavaScript). The client and the server also
// pass raknetBackend 'jsp-raknet' and the client useRaknetWorkers false (the
// worker would reload the module without the patch).
'use strict'
const fs = require('fs')
const path = require('path')
const Module = require('module')

const args = {}
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1]
const version = args.version || '1.26.45'
// The client's version, when it should differ from the server's (a refusal).
const clientVersion = args['client-version'] || version
const port = Number(args.port || 19470)
const username = args.username || 'Steve'
const loginTimeout = Number(args.timeout || 20) * 1000
// The client's target: the server, or a relay (--connect-host): on the
// server's port number, as jsp-raknet's server checks the port the client
// names in NewIncomingConnection against its own.
const connectHost = args['connect-host'] || '127.0.0.1'
const outPath = args.out || 'packets.jsonl'
const root = process.env.BEDROCK_NODE || path.join(__dirname, '..', 'target', 'bedrock-node', 'node_modules')
const CHAT = 'hello from raknet-dissect'
const play = Number(args.play || 0)
// --server-only: no client of ours; the server waits (up to twice
// --timeout) for one, such as `raknet-dissect connect --bedrock`, and ends
// at its Disconnect.
const serverOnly = Boolean(Number(args['server-only'] || 0))
// --client-only: no server of ours; the client logs in to the one on
// --port (such as `raknet-dissect serve --bedrock`), chats once the player
// spawned, and leaves with a Disconnect half a second later.
const clientOnly = Boolean(Number(args['client-only'] || 0))
// --silent-moves: the server does not answer move_player (a server changed
// to answer differently, for the replay's divergence report).
const silentMoves = Boolean(Number(args['silent-moves'] || 0))
// --burst N: the chat is answered with N level_chunks at once (8 KB each, as
// --play's), then the echo: a server that streams faster than a player takes.
const burst = Number(args.burst || 0)
// --transfer HOST:PORT (server): the client's chat is answered with a
// Transfer packet there; the server then ends when the client leaves.
const transferTo = args.transfer || null
let transferred = false
const world = Boolean(Number(args.world || 0))
// --world: packets not sent (the login's, those bedrock-protocol's client
// acts on, and those the server sends anyway).
const NOT_WORLD = new Set(['login', 'play_status', 'server_to_client_handshake', 'client_to_server_handshake',
  'disconnect', 'resource_packs_info', 'resource_pack_stack', 'resource_pack_client_response', 'text',
  'start_game', 'network_settings', 'request_network_settings', 'transfer', 'level_chunk',
  'chunk_radius_update', 'set_local_player_as_initialized', 'packet_violation_warning', 'server_to_client_handshake'])
// --every SEED: random packets of every type each way after the chat.
const every = args.every === undefined ? null : Number(args.every)
if (every !== null && !Number.isInteger(every)) {
  console.error(`bedrock_peers: --every SEED (an integer), not ${args.every}`)
  process.exit(1)
}
// Not with --world, whose level_chunk makes the client chat again.
if (every !== null && world) {
  console.error('bedrock_peers: --every or --world, not both')
  process.exit(1)
}
// --every: packets the client does not send: the login's, disconnect, those
// bedrock-protocol's server acts on (src/serverPlayer.js: the login's and
// set_local_player_as_initialized, which it refuses once the player spawned)
// and those the server here answers (resource_pack_client_response,
// request_chunk_radius, move_player, text).
const NOT_EVERY_CLIENT = new Set(['login', 'play_status', 'server_to_client_handshake', 'client_to_server_handshake',
  'disconnect', 'network_settings', 'request_network_settings', 'resource_packs_info', 'resource_pack_stack',
  'resource_pack_client_response', 'set_local_player_as_initialized', 'request_chunk_radius', 'move_player', 'text'])
// A level_chunk payload for round i: runs of a few block ids (palette
// indices), from a fixed seed, so a gameplay capture is the same each time.
function chunkPayload (i) {
  const out = Buffer.alloc(8192)
  let x = 0x9e3779b9 ^ (i * 0x85ebca6b)
  const rnd = () => { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; return x >>> 0 }
  for (let k = 0; k < out.length;) {
    const run = 1 + rnd() % 4
    const v = rnd() % 16
    for (let j = 0; j < run && k < out.length; j++) out[k++] = v
  }
  return out
}
// --skin bp: bedrock-protocol's default, minecraft-data's defaultSkin (a
// 256x256 persona skin with its geometry: the Login is about 590 KB before
// compression, 26 KB after); --skin classic: a 64x64 classic skin drawn from
// a fixed seed (the Login about 40 KB, 13 KB compressed), for small samples.
const skin = args.skin || 'bp'
if (!['bp', 'classic'].includes(skin)) {
  console.error(`bedrock_peers: --skin bp|classic, not ${skin}`)
  process.exit(1)
}
function classicSkin () {
  const img = Buffer.alloc(64 * 64 * 4)
  let x = 0x2545f491
  const rnd = () => { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; return (x >>> 0) / 2 ** 32 }
  const palette = [[0x3b, 0x2a, 0x1e], [0x6b, 0x4a, 0x2e], [0x2c, 0x5e, 0x9e], [0x1e, 0x3e, 0x6e],
    [0xc6, 0x96, 0x7a], [0xa8, 0x7a, 0x5e], [0x44, 0x44, 0x44], [0x22, 0x22, 0x22]]
  for (let i = 0; i < 64 * 64; i++) {
    if (rnd() < 0.45) continue // transparent
    const [r, g, b] = palette[Math.floor(rnd() * palette.length)]
    img.set([r, g, b, 255], i * 4)
  }
  const b64 = o => Buffer.from(JSON.stringify(o)).toString('base64')
  return {
    SkinId: 'c18e65aa-7b21-4637-9b63-8ad63622ef01.CustomSlim',
    SkinData: img.toString('base64'),
    SkinImageWidth: 64,
    SkinImageHeight: 64,
    SkinResourcePatch: b64({ geometry: { default: 'geometry.humanoid.custom' } }),
    SkinGeometryData: '',
    AnimatedImageData: [],
    PersonaPieces: [],
    PieceTintColors: [],
    PersonaSkin: false,
    ArmSize: 'wide'
  }
}

function fail (code, message) {
  console.error(`bedrock_peers: ${version}: ${message}`)
  try { writeOut() } catch (e) {}
  process.exit(code)
}

if (!fs.existsSync(path.join(root, 'bedrock-protocol', 'package.json'))) {
  fail(1, `bedrock-protocol is not installed under ${root}: run scripts/bedrock-setup.sh`)
}

// The patch: bedrock-protocol's `./rak` always gives jsp-raknet.
const load = Module._load
Module._load = function (request, parent, isMain) {
  const m = load.apply(this, arguments)
  if (request === './rak' && parent && parent.filename.includes(`${path.sep}bedrock-protocol${path.sep}`)) {
    return () => m('jsp-raknet')
  }
  return m
}
const bp = require(path.join(root, 'bedrock-protocol'))
const { Connection, ClientStatus } = require(path.join(root, 'bedrock-protocol', 'src', 'connection'))
const { Client } = require(path.join(root, 'bedrock-protocol', 'src', 'client'))
const { Player } = require(path.join(root, 'bedrock-protocol', 'src', 'serverPlayer'))
const mcData = require(path.join(root, 'minecraft-data'))
const [readVarInt] = require(path.join(root, 'protodef')).types.varint

// ---------------------------------------------------------------- packets

const { schemaOf } = require('./bedrock_schema')(mcData)
const serverSchema = schemaOf(version)
const clientSchema = schemaOf(clientVersion)

// --every: one of every packet type of a version but those in `skip`, with
// random values from `seed`, that pass bedrock_random.js's test (written,
// read back and rewritten to the same bytes by bedrock-protocol's compiled
// schema of the version); [name, params] in name order, and those skipped.
function everyPackets (ver, seed, skip) {
  const { createSerializer, createDeserializer } = require(path.join(root, 'bedrock-protocol', 'src', 'transforms', 'serializer'))
  const { randomOf } = require('./bedrock_random')(mcData)
  const random = randomOf(ver, seed)
  const serializer = createSerializer(ver)
  const deserializer = createDeserializer(ver)
  const packets = []
  const skipped = []
  for (const name of random.names().sort()) {
    if (skip.has(name) || !random.has(name)) continue
    const p = random.packet(name, serializer, deserializer)
    if (p.error) skipped.push(`${name} (${p.error})`)
    else packets.push([name, p.params])
  }
  return { packets, skipped }
}
const everyServer = every !== null && !clientOnly ? everyPackets(version, every, NOT_WORLD) : null
const everyClient = every !== null && !serverOnly ? everyPackets(clientVersion, every + 1, NOT_EVERY_CLIENT) : null
for (const [side, e] of [['server', everyServer], ['client', everyClient]]) {
  if (e?.skipped.length) console.error(`bedrock_peers: --every: the ${side} skips ${e.skipped.length}: ${e.skipped.join(', ')}`)
}

// ---------------------------------------------------------------- recording

// Everything each side handed to RakNet (sent) and everything its decoder
// gave its application (got), per connection object.
const log = [] // sent packets of both sides, in sending order
const state = new Map() // connection -> { side, pending: [], sentBatches, got: [], rx }
function stateOf (conn) {
  let s = state.get(conn)
  if (!s) {
    s = { side: conn instanceof Client ? 'client' : 'server', pending: [], sentBatches: 0, dropped: 0, got: [], rx: -1 }
    state.set(conn, s)
  }
  return s
}
function unframe (buffer) {
  const packets = []
  for (let o = 0; o < buffer.length;) {
    const { value, size } = readVarInt(buffer, o)
    packets.push(buffer.subarray(o + size, o + size + value))
    o += size + value
  }
  return packets
}
// A batch about to be compressed (and encrypted): queued until it reaches
// sendMCPE, the one door to RakNet (encryption keeps the order).
for (const [method, encrypted] of [['sendDecryptedBatch', false], ['sendEncryptedBatch', true]]) {
  const orig = Connection.prototype[method]
  Connection.prototype[method] = function (batch) {
    stateOf(this).pending.push({ packets: unframe(batch.getBuffer()), encrypted })
    return orig.call(this, batch)
  }
}
const sendMCPE = Connection.prototype.sendMCPE
Connection.prototype.sendMCPE = function (buffer, immediate) {
  const s = stateOf(this)
  const b = s.pending.shift()
  // bedrock-protocol's own test: a closed connection sends nothing.
  const dropped = this.connection?.connected === false || this.status === ClientStatus.Disconnected
  if (b && dropped) s.dropped++
  if (b && !dropped) {
    const n = s.sentBatches++
    const schema = s.side === 'client' ? clientSchema : serverSchema
    b.packets.forEach((p, k) => {
      const id = readVarInt(p, 0).value & 0x3ff
      log.push({ side: s.side, dir: s.side === 'client' ? 'c2s' : 's2c', batch: n, k, name: schema.name(id), id, hex: p.toString('hex'), encrypted: b.encrypted })
    })
  }
  return sendMCPE.call(this, buffer, immediate)
}
// Received: a clear batch goes through handle() to the packet reader at
// once; an encrypted one through the decipher to onDecryptedPacket.
const handle = Connection.prototype.handle
Connection.prototype.handle = function (buffer) {
  const s = stateOf(this)
  if (!this.encryptionEnabled) s.rx++
  return handle.call(this, buffer)
}
function watchDecrypted (conn) {
  const s = stateOf(conn)
  const orig = conn.onDecryptedPacket
  conn.onDecryptedPacket = buf => { s.rx++; return orig(buf) }
}
for (const cls of [Client, Player]) {
  const orig = cls.prototype.readPacket
  cls.prototype.readPacket = function (packet) {
    const s = stateOf(this)
    s.got.push({ batch: s.rx, hex: Buffer.from(packet).toString('hex') })
    return orig.call(this, packet)
  }
}

let written = false
function writeOut () {
  if (written) return
  written = true
  const got = { c2s: new Map(), s2c: new Map() }
  for (const s of state.values()) {
    const dir = s.side === 'client' ? 's2c' : 'c2s' // what this side received
    const byBatch = got[dir]
    for (const g of s.got) {
      if (!byBatch.has(g.batch)) byBatch.set(g.batch, [])
      byBatch.get(g.batch).push(g.hex)
    }
  }
  let mismatch = 0
  const lines = log.map(r => {
    const peer = got[r.dir].get(r.batch)
    r.received = peer !== undefined && peer[r.k] === r.hex
    if (peer !== undefined && peer[r.k] !== undefined && peer[r.k] !== r.hex) mismatch++
    const { k, ...rec } = r
    return JSON.stringify(rec) + '\n'
  })
  fs.writeFileSync(outPath, lines.join(''))
  // --received: every packet each side's bedrock-protocol decoded, in the
  // order it got them: {"side": the receiver, "dir", "name", "hex"}.
  if (args.received) {
    const rec = []
    for (const s of state.values()) {
      const schema = s.side === 'client' ? clientSchema : serverSchema
      for (const g of s.got) {
        const h = readHeader(Buffer.from(g.hex, 'hex'))
        rec.push(JSON.stringify({ side: s.side, dir: s.side === 'client' ? 's2c' : 'c2s', name: schema.name(h & 0x3ff), hex: g.hex }) + '\n')
      }
    }
    fs.writeFileSync(args.received, rec.join(''))
  }
  return mismatch
}

// The header varint of a packet.
function readHeader (buf) {
  let v = 0
  for (let i = 0, shift = 0; i < 5 && i < buf.length; i++, shift += 7) {
    v |= (buf[i] & 0x7f) << shift
    if (!(buf[i] & 0x80)) break
  }
  return v >>> 0
}

function finish (message) {
  const mismatch = writeOut()
  const summary = ['c2s', 's2c'].map(d => {
    const rs = log.filter(r => r.dir === d)
    const batches = new Set(rs.map(r => r.batch)).size
    return `${d} ${rs.length} packets in ${batches} batches (${rs.filter(r => r.encrypted).length} encrypted, ${rs.filter(r => !r.received).length} not received)`
  }).join('; ')
  const dropped = [...state.values()].reduce((n, s) => n + s.dropped, 0)
  const random = every === null ? '' : `; --every ${every}: server ${everyServer?.packets.length ?? 0}, client ${everyClient?.packets.length ?? 0} random packets`
  console.error(`bedrock_peers: ${version}: ${message}; ${summary}${dropped ? `; ${dropped} batches written after close, never sent` : ''}${random}`)
  if (mismatch) fail(5, `${mismatch} packets arrived with other bytes than were sent`)
  const lost = log.filter(r => !r.received).length
  if (every !== null && !serverOnly && !clientOnly && lost) fail(5, `${lost} packets sent were not received`)
  process.exit(0)
}

// ---------------------------------------------------------------- session

// The end: both sides' records written 300 ms later (what is still in
// flight arrives), then exit.
let stopping = false
function stop (code, why) {
  if (stopping) return
  stopping = true
  clearTimeout(loginTimer)
  clearTimeout(sessionTimer)
  try { client?.close() } catch (e) {}
  setTimeout(() => code === 0 ? finish(why) : fail(code, why), 300)
}

process.on('uncaughtException', e => fail(3, `error: ${e.stack || e}`))

const loginTimer = setTimeout(() => {
  const c = client ? Object.keys(ClientStatus).find(k => ClientStatus[k] === client.status) : 'not started'
  fail(2, `the login did not complete within ${loginTimeout / 1000} s (client status ${c}, server ${connectHost}:${port}); ` +
    `${log.length} game packets were sent`)
}, loginTimeout)
const sessionTime = 2 * loginTimeout + 100 * play
const sessionTimer = setTimeout(() => fail(2, `the session did not finish within ${sessionTime / 1000} s`), sessionTime)

const server = clientOnly
  ? { on () {}, serverTimer: true }
  : bp.createServer({ host: '127.0.0.1', port, version, offline: true, raknetBackend: 'jsp-raknet' })
let serverKey = null
server.on('connect', player => {
  watchDecrypted(player)
  // The server side's private key of this connection (PKCS#8 PEM).
  if (args['server-pem']) fs.writeFileSync(args['server-pem'], player.ecdhKeyPair.privateKey.export({ format: 'pem', type: 'pkcs8' }))
  const enable = player.enableEncryption
  player.enableEncryption = function (material) {
    serverKey = material.secretKeyBytes.toString('hex')
    // --server-only: the key of the server's side (no client here to give the salt).
    if (serverOnly && args.keylog) fs.writeFileSync(args.keylog, `BEDROCK_KEY ${serverKey}\n`)
    return enable.call(this, material)
  }
  const P = (name, set) => serverSchema.params(name, set)
  // After the client's handshake bedrock-protocol sends play_status
  // login_success by itself, then emits join.
  player.on('join', () => player.write('resource_packs_info', P('resource_packs_info')))
  let responses = 0
  let started = false
  let radius = null
  const spawn = () => {
    if (!started || radius === null) return
    player.write('chunk_radius_update', P('chunk_radius_update', { chunk_radius: radius }))
    player.write('play_status', { status: 'player_spawn' })
  }
  player.on('resource_pack_client_response', () => {
    if (++responses === 1) {
      player.write('resource_pack_stack', P('resource_pack_stack', { game_version: '*' }))
      return
    }
    if (responses !== 2) return
    player.queue('start_game', P('start_game', {
      entity_id: 1n,
      runtime_entity_id: 1n,
      player_gamemode: 'creative',
      world_gamemode: 'creative',
      player_position: { x: 0.5, y: 65.62, z: 0.5 },
      spawn_position: { x: 0, y: 64, z: 0 },
      seed: 1234n,
      difficulty: 1,
      generator: 2,
      dimension: 'overworld',
      permission_level: 'operator',
      server_chunk_tick_range: 4,
      game_version: '*',
      level_id: 'raknet-dissect',
      world_name: 'raknet-dissect test world',
      engine: 'bedrock-protocol',
      multiplayer_correlation_id: '<raknet-dissect>'
    }))
    if (serverSchema.has('item_registry')) player.queue('item_registry', P('item_registry'))
    else if (serverSchema.has('item_component')) player.queue('item_component', P('item_component'))
    player.queue('set_time', P('set_time', { time: 6000 }))
    player.queue('set_difficulty', P('set_difficulty', { difficulty: 1 }))
    player.queue('set_commands_enabled', P('set_commands_enabled', { enabled: true }))
    started = true
    spawn()
  })
  player.on('request_chunk_radius', p => { radius = Math.min(p.chunk_radius, 8); spawn() })
  player.on('move_player', p => {
    if (silentMoves) return
    const x = Math.floor(p.position.x / 16)
    const z = Math.floor(p.position.z / 16)
    player.queue('level_chunk', P('level_chunk', { x, z, sub_chunk_count: 1, payload: chunkPayload(x) }))
    player.queue('move_entity', P('move_entity', { runtime_entity_id: 2n, flags: 0, position: { x: p.position.x + 2, y: 65, z: 0.5 }, rotation: { yaw: 0, pitch: 0, head_yaw: 0 } }))
  })
  // --world: a world's worth of packets before the echo.
  const sendWorld = () => {
    const id = 'c0ffee00-1234-4abc-8def-0123456789ab'
    const item = { network_id: 0 }
    const set = {
      add_player: { uuid: id, username: 'Alex', runtime_id: 2n, platform_chat_id: '', position: { x: 2.5, y: 65, z: 0.5 }, pitch: 0, yaw: 90, head_yaw: 90, device_id: 'dev', device_os: 'Win10' },
      available_commands: {
        values_len: 2, enum_values: ['survival', 'creative'], chained_subcommand_values: [], suffixes: [],
        enums: [{ name: 'GameMode', values: [0, 1] }], chained_subcommands: [],
        command_data: [{ name: 'gamemode', description: 'Sets a game mode', flags: 0, permission_level: 'any', alias: -1, chained_subcommand_offsets: [], overloads: [] }],
        dynamic_enums: [], enum_constraints: []
      },
      inventory_content: { window_id: 'inventory', input: [item, item] }
    }
    for (const name of serverSchema.names().sort()) {
      if (NOT_WORLD.has(name) || !serverSchema.has(name)) continue
      let params
      try { params = P(name, set[name] || {}) } catch { continue }
      try { player.queue(name, params) } catch { }
    }
    player.queue('level_chunk', P('level_chunk', { x: 0, z: 0, sub_chunk_count: 1, payload: chunkPayload(0) }))
  }
  player.on('text', p => {
    // --transfer HOST:PORT: the chat is answered with a Transfer there.
    if (transferTo) {
      const [host, tport] = [transferTo.slice(0, transferTo.lastIndexOf(':')), Number(transferTo.slice(transferTo.lastIndexOf(':') + 1))]
      player.write('transfer', P('transfer', { server_address: host, port: tport, reload_world: false }))
      transferred = true
      // jsp-raknet does not tell bedrock-protocol of a disconnection
      // notification: the server ends a moment after, the client gone.
      setTimeout(() => stop(0, 'the server transferred the client'), 2000)
      return
    }
    if (world) sendWorld()
    for (let i = 0; i < burst; i++) {
      player.queue('level_chunk', P('level_chunk', { x: i, z: 0, sub_chunk_count: 1, payload: chunkPayload(i) }))
    }
    const echo = P('text', { type: 'chat', category: 'authored', source_name: p.source_name, message: p.message })
    if (everyServer) {
      // --every: the random packets, and the echo behind them in the queue.
      for (const [name, params] of everyServer.packets) player.queue(name, params)
      player.queue('text', echo)
    } else {
      player.write('text', echo)
    }
  })
  player.on('disconnect', p => stop(0, `the server got the client's disconnect: ${JSON.stringify(p.message)}`))
  player.on('close', () => transferred
    ? stop(0, 'the server transferred the client, which left')
    : args['expect-refusal']
    ? stop(0, 'refused as expected: the server closed the connection')
    : stop(4, 'the server closed the connection before the client\'s disconnect'))
})

let client
async function start (host = connectHost, toPort = port) {
  // createServer listens at once but binds asynchronously.
  for (let i = 0; i < 500 && !server.serverTimer; i++) await new Promise(resolve => setTimeout(resolve, 10))
  client = bp.createClient({
    host,
    port: toPort,
    version: clientVersion,
    offline: true,
    username,
    skipPing: !args.ping,
    raknetBackend: 'jsp-raknet',
    useRaknetWorkers: false,
    conLog: null,
    ...(skin === 'classic' ? { skinData: classicSkin() } : {})
  })
  watchDecrypted(client)
  // The client's private key (SEC1 PEM).
  if (args['client-pem']) fs.writeFileSync(args['client-pem'], client.ecdhKeyPair.privateKey.export({ format: 'pem', type: 'sec1' }))
  // The key, with the salt of the server's handshake, from inside the
  // client's key exchange.
  const verify = client.verifyServerHandshake
  client.verifyServerHandshake = function (packet) {
    const material = verify.call(this, packet)
    const claims = JSON.parse(Buffer.from(packet.token.split('.')[1], 'base64url').toString())
    const salt = Buffer.from(claims.salt, 'base64')
    const key = material.secretKeyBytes.toString('hex')
    if (serverKey !== null && serverKey !== key) fail(5, `the client's key ${key} is not the server's ${serverKey}`)
    if (args.keylog) fs.writeFileSync(args.keylog, `BEDROCK_SALT_KEY ${salt.toString('hex')} ${key}\n`)
    return material
  }
  client.on('join', () => clearTimeout(loginTimer))
  const C = (name, set) => clientSchema.params(name, set)
  const chat = () => {
    client.write('text', C('text', { type: 'chat', category: 'authored', source_name: username, message: CHAT }))
    // --every: the client's random packets (sent on its next tick).
    for (const [name, params] of everyClient?.packets || []) client.queue(name, params)
  }
  // --play N: a round is the client's move, answered by the server's chunk.
  let round = 0
  const move = () => client.write('move_player', C('move_player', {
    runtime_id: 1, position: { x: 16 * round + 0.5, y: 65.62, z: 0.5 }, pitch: 0, yaw: 90, head_yaw: 90, mode: 'normal', on_ground: true, tick: BigInt(round)
  }))
  // The chat (and what goes with it) once: --world's level_chunk must not
  // start the session's end a second time.
  let chatted = false
  const chatOnce = () => { if (!chatted) { chatted = true; chat() } }
  // --client-only: the chat, then the Disconnect half a second later (after --play's rounds).
  const leave = () => {
    chat()
    setTimeout(() => {
      if (self !== client) return // transferred: the new connection leaves
      client.write('disconnect', clientSchema.params('disconnect', { message: 'bye from the test client' }))
      setTimeout(() => stop(0, 'client-only: the player spawned, chatted and left'), 500)
    }, 500)
  }
  const last = () => clientOnly ? (chatted ? null : (chatted = true, leave())) : chatOnce()
  client.on('level_chunk', () => ++round < play ? move() : last())
  client.on('spawn', () => {
    if (play > 0) move()
    else last()
  })
  // bedrock-protocol's Client.disconnect() writes the packet and closes the
  // RakNet connection at once; jsp-raknet's client then sends its 0x15 but
  // drops the game packet still in its send queue. So the same packet, and
  // the close once the server has it.
  client.on('text', p => {
    if (p.message !== CHAT) return
    const bye = clientSchema.params('disconnect', { message: 'bye from the test client' })
    // --every: queued, behind the client's random packets.
    if (everyClient) client.queue('disconnect', bye)
    else client.write('disconnect', bye)
  })
  client.on('play_status', p => {
    if (!String(p.status).startsWith('failed')) return
    if (args['expect-refusal']) stop(0, `refused as expected: ${p.status}`)
    else stop(4, `the server refused the client: ${p.status}`)
  })
  // A Transfer: this connection closed, a new one to where it says (as
  // the game does).
  const self = client
  client.on('transfer', p => {
    console.error(`bedrock_peers: transferred to ${p.server_address}:${p.port}`)
    self.removeAllListeners('close')
    self.close()
    start(p.server_address, p.port)
  })
  client.on('close', () => args['expect-refusal']
    ? stop(0, 'refused as expected: the client\'s connection closed')
    : stop(4, 'the client\'s connection closed before its disconnect'))
  client.on('error', e => fail(3, `client error: ${e.stack || e}`))
}
if (serverOnly) {
  clearTimeout(loginTimer)
  console.error(`bedrock_peers: a ${version} server on 127.0.0.1:${port}, waiting for a client`)
} else {
  start()
}
