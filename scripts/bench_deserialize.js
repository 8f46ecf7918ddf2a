#!/usr/bin/env node
// bench_deserialize.js: what bedrock-protocol's own receiving side costs, for
// scripts/bench-game.sh to set beside ours on the same game packets.
//
// Reads a session's recording (bedrock_peers.js --out: every game packet each
// side sent, with its batch), rebuilds each encrypted batch as
// bedrock-protocol's framer builds it (varint-prefixed packets; above the
// 512-byte threshold the algorithm byte 0 and raw DEFLATE at level 7, below
// it 0xff and the packets as they are), repeats them until MB megabytes of
// packets, then times, on one thread:
//   inflate          zlib.inflateRawSync of each batch (node's zlib)
//   deserialize      inflate + split (Framer.getPackets) + parsePacketBuffer
//                    of every packet, as bedrock-protocol's client and server
//                    read what they receive
// and prints one JSON line: {"packets", "bytes" (decompressed packet bytes),
// "inflate_s", "deserialize_s"}: the median of RUNS runs after a warm-up.
// With --batches FILE it also writes the batches, each as a 4-byte
// little-endian length and the bytes after the algorithm byte (0xff: stored),
// for the inflate-only ceiling of ours (examples/inflate_ceiling.rs).
//
//   node scripts/bench_deserialize.js --packets P.jsonl --version 1.26.45 \
//        [--mb 100] [--runs 5] [--batches FILE]
'use strict'
const fs = require('fs')
const path = require('path')
const zlib = require('zlib')

const root = process.env.BEDROCK_NODE || path.join(__dirname, '..', 'target', 'bedrock-node', 'node_modules')
const { createDeserializer } = require(path.join(root, 'bedrock-protocol', 'src', 'transforms', 'serializer'))
const { Framer } = require(path.join(root, 'bedrock-protocol', 'src', 'transforms', 'framer'))
const writeVarInt = require(path.join(root, 'protodef')).types.varint[1]
const sizeOfVarInt = require(path.join(root, 'protodef')).types.varint[2]

const args = {}
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1]
const version = args.version || '1.26.45'
const mb = Number(args.mb || 100)
const runs = Number(args.runs || 5)
const THRESHOLD = 512
const LEVEL = 7

// The encrypted batches, in order, each its packets.
const batches = new Map()
for (const line of fs.readFileSync(args.packets, 'utf8').split('\n')) {
  if (!line) continue
  const r = JSON.parse(line)
  if (!r.encrypted) continue
  const k = `${r.dir} ${r.batch}`
  if (!batches.has(k)) batches.set(k, [])
  batches.get(k).push(Buffer.from(r.hex, 'hex'))
}
// One batch as the framer writes it: [algorithm byte, body].
function frame (packets) {
  const parts = []
  for (const p of packets) {
    const len = Buffer.alloc(sizeOfVarInt(p.length))
    writeVarInt(p.length, len, 0)
    parts.push(len, p)
  }
  const buf = Buffer.concat(parts)
  return buf.length > THRESHOLD ? [0, zlib.deflateRawSync(buf, { level: LEVEL })] : [255, buf]
}
const one = [...batches.values()].map(frame)
const oneBytes = [...batches.values()].reduce((n, ps) => n + ps.reduce((m, p) => m + p.length, 0), 0)
const copies = Math.max(1, Math.ceil(mb * 1e6 / oneBytes))
const all = []
for (let i = 0; i < copies; i++) all.push(...one)
const packets = copies * [...batches.values()].reduce((n, ps) => n + ps.length, 0)

if (args.batches) {
  const out = []
  for (const [algo, body] of all) {
    const len = Buffer.alloc(5)
    len.writeUInt32LE(body.length, 0)
    len[4] = algo
    out.push(len, body)
  }
  fs.writeFileSync(args.batches, Buffer.concat(out))
}

const deserializer = createDeserializer(version)
function inflate () {
  let n = 0
  for (const [algo, body] of all) n += (algo === 0 ? Framer.decompress(0, body) : body).length
  return n
}
function deserialize () {
  let n = 0
  for (const [algo, body] of all) {
    const decompressed = algo === 0 ? Framer.decompress(0, body) : body
    for (const p of Framer.getPackets(decompressed)) {
      deserializer.parsePacketBuffer(p)
      n++
    }
  }
  return n
}
const inflated = inflate()
if (inflated < copies * oneBytes) {
  console.error(`bench_deserialize: the batches inflate to ${inflated} bytes, less than their ${copies * oneBytes} bytes of packets`)
  process.exit(1)
}
// Interleaved, so that neither pays alone for the heap's growth or the
// collector: the median of each.
inflate()
deserialize()
const ts = { inflate: [], deserialize: [] }
for (let i = 0; i < runs; i++) {
  for (const [name, f] of [['inflate', inflate], ['deserialize', deserialize]]) {
    const s = process.hrtime.bigint()
    f()
    ts[name].push(Number(process.hrtime.bigint() - s) / 1e9)
  }
}
const median = xs => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const inflateS = median(ts.inflate)
const deserializeS = median(ts.deserialize)
console.log(JSON.stringify({ packets, bytes: copies * oneBytes, inflate_s: inflateS, deserialize_s: deserializeS }))
