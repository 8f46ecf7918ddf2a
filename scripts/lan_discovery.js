#!/usr/bin/env node
'use strict'
// NetherNet LAN discovery (UDP 7551) peers on the npm package `nethernet` 1.1.2
// (PrismarineJS/node-nethernet; pure JS, WebRTC on werift), installed in scripts/lan/
// (cd scripts/lan && npm ci --ignore-scripts). Used by scripts/lan-discovery-capture.sh.
//
//   node scripts/lan_discovery.js server TRUTH.jsonl [options]
//   node scripts/lan_discovery.js client TRUTH.jsonl [options]
//   node scripts/lan_discovery.js merge OUT.jsonl IN.jsonl...   (sorted by t)
//
// Options (both sides): --server-id N --client-id N --connection-id N (decimal u64),
// --broadcast ADDR (client: where discovery requests go, default 127.255.255.255),
// --server-data-version 6|4 (server: the advertisement layout, see encodeServerData),
// --timeout MS (each side gives up after MS, default 20000),
// --keylog FILE (append the join's DTLS keys in NSS key-log format:
// CLIENT_RANDOM <ClientHello random> <master secret>, one line per association),
// --game-batch HEX (client: the batch it sends once connected instead of the default
// 06c10100000879: RequestNetworkSettings (id 193 = varuint c1 01, protocol 2169, as
// bedrock-protocol 1.26.45 sends it) framed as a real client frames its first batch,
// before NetworkSettings: varuint32 length + packet, no compression-algorithm byte).
// Repeatable: the batches go in this order and the client waits for every echo; a
// batch past 10000 bytes goes as several NetherNet segments, each SCTP-fragmented).
//
// What happens: the server binds 0.0.0.0:7551 and advertises a world; the client
// broadcasts discovery requests (nethernet sends one at once and one every 2 s),
// gets the response, sends CONNECTREQUEST (SDP offer) + CANDIDATEADD as discovery
// messages; the server answers CONNECTRESPONSE (SDP answer) + CANDIDATEADD; ICE,
// DTLS and SCTP (on other UDP ports) connect; the client sends a game batch over
// ReliableDataChannel, the server echoes it; then the client sends a second
// CONNECTREQUEST (another connection ID) whose SDP has no data channel, which the
// server refuses with CONNECTERROR 13 (FailedToSetRemoteDescription); then both close.
//
// The truth (merge sorts it by t): one JSON line per discovery packet each side sent or received, recorded
// inside nethernet: its util.prepareSecurePacket (the packet object it serializes and
// the plaintext it encrypts), dgram's send (the wire bytes, the addresses, the send
// result) and each side's processPacket (wire bytes in, nethernet's own decode):
//   {t, side, event: sent|received, local, peer, packet_id, packet, sender_id,
//    length_prefix, fields, plaintext_hex, wire_hex[, error]}
// fields: request {}; response {application_data (the hex text as sent),
// application_data_hex, server_data (decoded by this script: nethernet treats the
// advertisement as opaque bytes, which it hex-encodes)}; message {recipient_id, data
// (the signal text), signal {type, connection_id, data}}.
// IDs are decimal strings (u64).
// The join, recorded inside werift 0.24.4 (hooks below), adds records with a "type"
// (the discovery records have none):
//   {t, side, type: dtls, cipher, client_random, server_random}   when a side keys its
//     DTLS association (its --keylog line has the master secret);
//   {t, side, type: sctp, event: connected, is_server, local, peer (the ICE pair),
//    local_port, remote_port (SCTP)};
//   {t, side, type: dcep, event: sent|received, kind: open|ack, label, stream_id, ppid, hex};
//   {t, side, type: message, event: sent|received, index (per side, label and event),
//    hex (the message as the application sent or got it), label, stream_id, ordered,
//    ppid (51 string, 53 binary, 56/57 empty), binary[, wire_hex (empty PPIDs: the
//    padding byte on the wire)][, max_retransmits]}, in the order werift handed the
//    message to SCTP (sent) or SCTP delivered it (received).

const path = require('node:path')
const fs = require('node:fs')
const dgram = require('node:dgram')
const { createRequire } = require('node:module')

const lanRequire = createRequire(path.join(__dirname, 'lan', 'package.json'))

function parseArgs (argv) {
  const opts = {
    serverId: 13370000000000000001n,
    clientId: 4200000000000000042n,
    connectionId: 7000000000000000007n,
    broadcast: '127.255.255.255',
    serverDataVersion: 6,
    timeout: 20000
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const v = () => argv[++i]
    if (a === '--server-id') opts.serverId = BigInt(v())
    else if (a === '--client-id') opts.clientId = BigInt(v())
    else if (a === '--connection-id') opts.connectionId = BigInt(v())
    else if (a === '--broadcast') opts.broadcast = v()
    else if (a === '--server-data-version') opts.serverDataVersion = Number(v())
    else if (a === '--timeout') opts.timeout = Number(v())
    else if (a === '--keylog') opts.keylog = v()
    else if (a === '--game-batch') (opts.gameBatches ??= []).push(Buffer.from(v(), 'hex'))
    else throw new Error(`unknown option ${a}`)
  }
  return opts
}

// ---- the advertisement (ServerData), written by this script ----
// nethernet 1.1.2 sends Server.setAdvertisement(buffer) as buffer.toString('hex') in
// the response's u32-length-prefixed string; it defines no ServerData layout.
// Version 6: go-nethernet discovery/server_data.go (version 6):
//   u8 version, string ServerName, string LevelName, varint32 GameType (zigzag),
//   i32le PlayerCount, i32le MaxPlayerCount, bool EditorWorld, bool Hardcore,
//   bool AcceptsOnlineAuth, bool AcceptsSelfSignedAuth, string Nonce,
//   varint32 TransportLayer (zigzag), varint32 ConnectionType (zigzag);
//   string = varuint32 length + UTF-8.
// Version 4: bedrock-protocol's nethernet branch, src/server/advertisement.js
// NethernetServerAdvertisement.toBuffer:
//   u8 version, u8 len + motd, u8 len + levelName, u8 gamemodeId (raw),
//   i32le playerCount, i32le playersMax, u8 isEditorWorld, u8 hardcore,
//   u8 unknown1 (4), u8 unknown2 (8).
const WORLD = {
  serverName: 'Steve',
  levelName: 'My World \u00e9\u4e16\u754c',
  gameType: 1,
  playerCount: 1,
  maxPlayerCount: 8,
  editorWorld: false,
  hardcore: false,
  acceptsOnlineAuth: true,
  acceptsSelfSignedAuth: true,
  nonce: '8f2c1d4e5a6b7c8d9e0f1a2b3c4d5e6f',
  transportLayer: 2,
  connectionType: 4
}

function varuint (n) {
  const out = []
  n >>>= 0
  while (n >= 0x80) { out.push((n & 0x7f) | 0x80); n >>>= 7 }
  out.push(n)
  return Buffer.from(out)
}
const zigzag = (v) => ((v << 1) ^ (v >> 31)) >>> 0
const i32 = (v) => { const b = Buffer.alloc(4); b.writeInt32LE(v); return b }
const vstr = (s) => { const b = Buffer.from(s, 'utf8'); return Buffer.concat([varuint(b.length), b]) }
const u8str = (s) => { const b = Buffer.from(s, 'utf8'); if (b.length > 255) throw new Error('too long'); return Buffer.concat([Buffer.from([b.length]), b]) }

function encodeServerData (w, version) {
  if (version === 6) {
    return Buffer.concat([
      Buffer.from([6]), vstr(w.serverName), vstr(w.levelName), varuint(zigzag(w.gameType)),
      i32(w.playerCount), i32(w.maxPlayerCount),
      Buffer.from([+w.editorWorld, +w.hardcore, +w.acceptsOnlineAuth, +w.acceptsSelfSignedAuth]),
      vstr(w.nonce), varuint(zigzag(w.transportLayer)), varuint(zigzag(w.connectionType))
    ])
  }
  if (version === 4) {
    return Buffer.concat([
      Buffer.from([4]), u8str(w.serverName), u8str(w.levelName), Buffer.from([w.gameType]),
      i32(w.playerCount), i32(w.maxPlayerCount), Buffer.from([+w.editorWorld, +w.hardcore, 4, 8])
    ])
  }
  throw new Error(`server data version ${version}: 6 or 4`)
}

function decodeServerData (buf) {
  let o = 0
  const u8 = () => { if (o >= buf.length) throw new Error('eof'); return buf[o++] }
  const vu = () => { let v = 0; for (let s = 0; s < 35; s += 7) { const b = u8(); v |= (b & 0x7f) << s; if (!(b & 0x80)) return v >>> 0 } throw new Error('varint') }
  const vi = () => { const u = vu(); return (u >>> 1) ^ -(u & 1) }
  const bytes = (n) => { if (o + n > buf.length) throw new Error('eof'); const b = buf.subarray(o, o + n); o += n; return b }
  const r32 = () => bytes(4).readInt32LE(0)
  const version = u8()
  let d
  if (version === 6) {
    d = { version, serverName: bytes(vu()).toString('utf8'), levelName: bytes(vu()).toString('utf8'), gameType: vi(), playerCount: r32(), maxPlayerCount: r32(), editorWorld: !!u8(), hardcore: !!u8(), acceptsOnlineAuth: !!u8(), acceptsSelfSignedAuth: !!u8(), nonce: bytes(vu()).toString('utf8'), transportLayer: vi(), connectionType: vi() }
  } else if (version === 4) {
    d = { version, serverName: bytes(u8()).toString('utf8'), levelName: bytes(u8()).toString('utf8'), gameType: u8(), playerCount: r32(), maxPlayerCount: r32(), editorWorld: !!u8(), hardcore: !!u8(), unknown1: u8(), unknown2: u8() }
  } else {
    return { version, undecoded_hex: buf.toString('hex') }
  }
  if (o !== buf.length) d.trailing_hex = buf.subarray(o).toString('hex')
  return d
}

// ---- hooks inside nethernet ----
// Patch util.prepareSecurePacket before nethernet's client/server modules load:
// they destructure it from the util module at load time.
const nnUtil = lanRequire('nethernet/src/util')
const nnCrypto = lanRequire('nethernet/src/crypto')
const { SignalStructure } = lanRequire('nethernet/src/signalling')
const origPrepare = nnUtil.prepareSecurePacket
const origProcess = nnUtil.processSecurePacket
const prepared = new WeakMap() // wire Buffer -> { packetData, plaintext }
nnUtil.prepareSecurePacket = function (serializer, packetData) {
  const plaintext = serializer.createPacketBuffer(packetData)
  const wire = origPrepare(serializer, packetData)
  prepared.set(wire, { packetData, plaintext })
  return wire
}

// werift skips loopback interfaces when it gathers host candidates: add 127.0.0.1
// (and no IPv6) so that ICE works in a network namespace that has only lo.
const nnWerift = lanRequire('nethernet/src/werift')
const BaseRTC = nnWerift.RTCPeerConnection
nnWerift.RTCPeerConnection = class extends BaseRTC {
  constructor (config = {}) {
    super({ ...config, iceAdditionalHostAddresses: ['127.0.0.1'], iceUseIpv6: false })
  }
}

// ---- hooks inside werift (0.24.4): DTLS keys and data-channel messages ----
// werift's package exports hide its internals; require them by file (the same module
// instances werift itself loads: same resolved path).
const weriftLib = path.join(path.dirname(lanRequire.resolve('werift')), '..', '..')
const weriftAead = require(path.join(weriftLib, 'dtls', 'src', 'cipher', 'suites', 'aead.js')).default
const { RTCSctpTransport } = lanRequire('werift')
const WEBRTC_DCEP = 50

// DTLS keys. Both sides derive the master secret (extended master secret when both
// offer it, which werift does) in flight5.js (client) / flight6.js (server) and then
// call cipher.init(masterSecret, serverRandom, clientRandom) on the suite's AEADCipher
// (cipher/suites/aead.js; werift only implements AEAD suites). Wrapping init sees the
// 48-byte master secret and the ClientHello random of each association, whatever the
// side's role; NSS key-log line: CLIENT_RANDOM <client random> <master secret>.
let keylogFd = null
const origAeadInit = weriftAead.prototype.init
weriftAead.prototype.init = function (masterSecret, serverRandom, clientRandom) {
  const r = origAeadInit.call(this, masterSecret, serverRandom, clientRandom)
  try {
    const cr = Buffer.from(clientRandom).toString('hex')
    if (keylogFd !== null) fs.writeSync(keylogFd, `CLIENT_RANDOM ${cr} ${Buffer.from(masterSecret).toString('hex')}\n`)
    record({ type: 'dtls', cipher: this.name, client_random: cr, server_random: Buffer.from(serverRandom).toString('hex') })
  } catch (e) { log('keylog hook:', e) }
  return r
}

// Data-channel messages, at werift's SCTP boundary: RTCSctpTransport hands every
// message to its SCTP association's send(streamId, ppid, bytes, opts) (an instance
// property, in the order the TSNs are assigned) and gets every reassembled message
// from the association's receive(streamId, ppid, bytes) (the prototype method that
// feeds datachannelReceive). Wrapped on each association as setDtlsTransport creates
// it. Application messages (PPID 51/53/56/57) are "message" records; DCEP (PPID 50)
// "dcep" records. index counts a side's messages per label and event.
const PPID_NAMES = { 50: 'dcep', 51: 'string', 53: 'binary', 56: 'string_empty', 57: 'binary_empty' }
const msgIndex = new Map()
function dcepLabel (data) {
  // DATA_CHANNEL_OPEN: !BBHLHH, then label and protocol
  if (data.length < 12 || data[0] !== 0x03) return undefined
  const n = data.readUInt16BE(8)
  return data.subarray(12, 12 + n).toString('utf8')
}
function recordMessage (transport, event, streamId, ppid, data, opts) {
  try {
    const channel = transport.dataChannels[streamId]
    const bytes = Buffer.from(data ?? [])
    const label = channel?.label ?? (ppid === WEBRTC_DCEP ? dcepLabel(bytes) : undefined) ?? null
    const ordered = opts ? opts.ordered !== false : (channel ? channel.ordered : null)
    if (ppid === WEBRTC_DCEP) {
      const kind = { 0x03: 'open', 0x02: 'ack' }[bytes[0]] ?? 'unknown'
      record({ type: 'dcep', event, kind, label, stream_id: streamId, ppid, hex: bytes.toString('hex') })
      return
    }
    const key = `${event} ${label}`
    const index = msgIndex.get(key) ?? 0
    msgIndex.set(key, index + 1)
    // What the application got or gave: the empty PPIDs carry no message bytes.
    const empty = ppid === 56 || ppid === 57
    const rec = {
      type: 'message',
      event,
      index,
      hex: empty ? '' : bytes.toString('hex'),
      label,
      stream_id: streamId,
      ordered,
      ppid,
      binary: ppid === 53 || ppid === 57
    }
    if (empty && bytes.length) rec.wire_hex = bytes.toString('hex')
    if (opts && opts.maxRetransmits !== undefined) rec.max_retransmits = opts.maxRetransmits
    record(rec)
  } catch (e) { log('message hook:', e) }
}
const origSetDtls = RTCSctpTransport.prototype.setDtlsTransport
RTCSctpTransport.prototype.setDtlsTransport = function (dtlsTransport) {
  const before = this.sctp
  const r = origSetDtls.call(this, dtlsTransport)
  const sctp = this.sctp
  if (sctp && sctp !== before && !sctp.__lanHooked) {
    sctp.__lanHooked = true
    const transport = this
    const send = sctp.send
    sctp.send = function (streamId, ppid, userData, opts) {
      recordMessage(transport, 'sent', streamId, ppid, userData, opts)
      return send.apply(this, arguments)
    }
    const receive = sctp.receive
    sctp.receive = function (streamId, ppid, data) {
      // before werift's handler: the application may answer from inside it
      recordMessage(transport, 'received', streamId, ppid, data)
      return receive.apply(this, arguments)
    }
    sctp.stateChanged.connected.subscribe(() => {
      try {
        const pair = dtlsTransport.iceTransport.connection.nominated
        const lc = pair?.localCandidate
        record({
          type: 'sctp',
          event: 'connected',
          is_server: sctp.isServer,
          local: lc ? `${lc.host}:${lc.port}` : null,
          peer: pair ? pair.remoteAddr.join(':') : null,
          local_port: sctp.port ?? null,
          remote_port: sctp.remotePort ?? null
        })
      } catch (e) { log('sctp hook:', e) }
    })
  }
  return r
}

const { Client, Server } = lanRequire('nethernet')
const PACKET_IDS = { discovery_request: 0, discovery_response: 1, discovery_message: 2 }

const epochMs = () => performance.timeOrigin + performance.now()
let out
let side
function record (obj, t = epochMs()) {
  fs.writeSync(out, JSON.stringify({ t: Number(t.toFixed(3)), side, ...obj }) + '\n')
}

function describe (name, params, plaintext) {
  const fields = {}
  if (name === 'discovery_response') {
    const appData = Buffer.from(params.data, 'hex')
    fields.application_data = params.data
    fields.application_data_hex = appData.toString('hex')
    try { fields.server_data = decodeServerData(appData) } catch (e) { fields.server_data_error = String(e) }
  } else if (name === 'discovery_message') {
    fields.recipient_id = BigInt(params.recipient_id).toString()
    fields.data = params.data
    try {
      const s = SignalStructure.fromString(params.data)
      fields.signal = { type: s.type, connection_id: s.connectionId.toString(), data: s.data }
    } catch (e) { fields.signal_error = String(e) }
  }
  return {
    packet_id: PACKET_IDS[name],
    packet: name,
    sender_id: BigInt(params.sender_id).toString(),
    reserved_hex: Buffer.from(params.reserved).toString('hex'),
    length_prefix: plaintext.readUInt16LE(0),
    fields,
    plaintext_hex: plaintext.toString('hex')
  }
}

const origSend = dgram.Socket.prototype.send
dgram.Socket.prototype.send = function (msg, ...args) {
  const info = Buffer.isBuffer(msg) && prepared.get(msg)
  if (!info) return origSend.call(this, msg, ...args)
  const [port, address] = args
  const sock = this
  // t: when nethernet handed the datagram to dgram; the line is written from the send
  // callback (the socket's address is known by then: the client's first request goes
  // out while its socket binds), with the error if the send failed.
  const t = epochMs()
  let cb = typeof args[args.length - 1] === 'function' ? args.pop() : null
  const done = (err, bytes) => {
    let local = null
    try { const a = sock.address(); local = `${a.address}:${a.port}` } catch (_) {}
    record({
      event: 'sent',
      local,
      peer: `${address}:${port}`,
      ...describe(info.packetData.name, info.packetData.params, info.plaintext),
      wire_hex: msg.toString('hex'),
      ...(err ? { error: String(err.code || err) } : {})
    }, t)
    if (cb) cb(err, bytes)
    cb = null
  }
  return origSend.call(this, msg, ...args, done)
}

function hookReceive (peer) {
  const orig = peer.processPacket
  peer.processPacket = function (buffer, rinfo) {
    let local = null
    try { const a = this.socket.address(); local = `${a.address}:${a.port}` } catch (_) {}
    const base = { event: 'received', local, peer: `${rinfo.address}:${rinfo.port}` }
    try {
      const { name, params } = origProcess(buffer, this.deserializer)
      const plaintext = nnCrypto.decrypt(buffer.subarray(32))
      record({ ...base, ...describe(name, params, plaintext), wire_hex: buffer.toString('hex') })
    } catch (e) {
      record({ ...base, error: String(e), wire_hex: buffer.toString('hex') })
    }
    return orig.call(this, buffer, rinfo)
  }
}

function log (...a) { console.error(`[${side}]`, ...a) }

async function runServer (opts) {
  const server = new Server({ networkId: opts.serverId, webrtcBackend: 'werift', acceptTimeoutMs: 10000 })
  hookReceive(server)
  const sd = encodeServerData(WORLD, opts.serverDataVersion)
  server.setAdvertisement(sd)
  await server.listen()
  log(`listening on 7551, network id ${server.networkId}, server data v${opts.serverDataVersion} ${sd.toString('hex')}`)
  console.log('READY')
  let opened = 0
  const finish = (code, why) => {
    log(why)
    server.close(why)
    setTimeout(() => process.exit(code), 300)
  }
  const timer = setTimeout(() => finish(1, 'timeout'), opts.timeout)
  server.on('openConnection', (conn) => {
    opened++
    log(`connection ${conn.address} open`)
  })
  server.on('encapsulated', (buf, connId) => {
    log(`game batch from ${connId}: ${buf.toString('hex')}; echoing`)
    server.connections.get(connId)?.send(buf)
  })
  server.on('closeConnection', (connId, reason) => {
    log(`connection ${connId} closed: ${reason}`)
    if (opened && String(connId) === String(opts.connectionId)) {
      clearTimeout(timer)
      setTimeout(() => finish(0, 'done'), 500)
    }
  })
  process.on('SIGTERM', () => finish(opened ? 0 : 1, 'SIGTERM'))
}

async function runClient (opts) {
  const client = new Client(opts.serverId, opts.broadcast, {
    networkId: opts.clientId,
    connectionId: opts.connectionId,
    webrtcBackend: 'werift',
    responseTimeoutMs: 10000,
    inactivityTimeoutMs: 10000
  })
  hookReceive(client)
  const fail = (why) => { log(`FAILED: ${why}`); client.close(why); setTimeout(() => process.exit(1), 300) }
  const timer = setTimeout(() => fail('timeout'), opts.timeout)
  let pongs = 0
  client.on('pong', (params) => {
    if (pongs++ === 0) log(`discovered ${BigInt(params.sender_id)}: ${JSON.stringify(decodeServerData(Buffer.from(params.data, 'hex')))}`)
  })
  client.on('error', (e) => log('error', e))
  client.on('disconnect', (id, reason) => log(`disconnect ${id}: ${reason}`))
  client.on('connected', () => {
    log('connected; sending a game batch')
    // A Bedrock batch as NetherNet carries the first one: varuint32 len + packet, no
    // compression byte before NetworkSettings (request_network_settings, id 193 = c1 01,
    // protocol 2169 big-endian).
    for (const b of opts.gameBatches ?? [Buffer.from('06c10100000879', 'hex')]) client.send(b)
  })
  let echoes = 0
  client.on('encapsulated', (buf) => {
    if (++echoes < (opts.gameBatches?.length ?? 1)) {
      log(`echo ${echoes}: ${buf.length > 64 ? buf.length + ' bytes' : buf.toString('hex')}`)
      return
    }
    log(`echo: ${buf.length > 64 ? buf.length + ' bytes' : buf.toString('hex')}; sending a refused CONNECTREQUEST`)
    // A second offer on the same discovery channel, through nethernet's own sender,
    // whose SDP has no m=application section: the server cannot set it as its remote
    // description and answers CONNECTERROR <id> 13.
    const badId = opts.connectionId + 1n
    const sdp = 'v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n'
    client.sendDiscoveryMessage(new SignalStructure('CONNECTREQUEST', badId, sdp, opts.serverId))
    client.once('connecterror-seen', () => {
      clearTimeout(timer)
      log('CONNECTERROR received; closing')
      client.close('done')
      setTimeout(() => process.exit(0), 500)
    })
  })
  // nethernet's client ignores signals of another connection ID: watch for it here.
  const orig = client.processPacket
  client.processPacket = function (buffer, rinfo) {
    try {
      const { name, params } = origProcess(buffer, this.deserializer)
      if (name === 'discovery_message' && params.data.startsWith('CONNECTERROR ')) setImmediate(() => client.emit('connecterror-seen'))
    } catch (_) {}
    return orig.call(this, buffer, rinfo)
  }
  client.connect()
}

function merge (outFile, inputs) {
  const lines = []
  for (const f of inputs) {
    for (const l of fs.readFileSync(f, 'utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l))
  }
  lines.sort((a, b) => a.t - b.t)
  fs.writeFileSync(outFile, lines.map((l) => JSON.stringify(l)).join('\n') + '\n')
}

function main () {
  const [mode, file, ...rest] = process.argv.slice(2)
  if (mode === 'merge') return merge(file, rest)
  if (mode !== 'server' && mode !== 'client') {
    console.error('usage: lan_discovery.js server|client TRUTH.jsonl [options] | merge OUT IN...')
    process.exit(2)
  }
  side = mode
  out = fs.openSync(file, 'w')
  const opts = parseArgs(rest)
  if (opts.keylog) keylogFd = fs.openSync(opts.keylog, 'a')
  const run = mode === 'server' ? runServer : runClient
  run(opts).catch((e) => { log(e); process.exit(1) })
}

main()
