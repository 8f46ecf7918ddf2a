#!/usr/bin/env node
// bedrock-fields.js: bedrock-protocol's own deserializer on game packets,
// to check the fields `raknet-dissect game --json` decodes. Reads lines
// {"version": "1.26.45", "hex": "<the packet, header included>"} on stdin,
// writes one line per packet: {"name": ..., "params": ...} or
// {"error": "..."}; params normalised for comparison as docs/bedrock-fields.md
// says: 64-bit numbers (BigInt, protodef's [hi, lo] arrays) as JSON numbers
// up to 2^53 and decimal strings past, Buffers as lowercase hex, undefined
// as null. UUIDs stay as bedrock-protocol reads them (bytes in order).
//   node scripts/bedrock-fields.js < packets.jsonl
'use strict'
const path = require('path')
const readline = require('readline')

const root = process.env.BEDROCK_NODE || path.join(__dirname, '..', 'target', 'bedrock-node', 'node_modules')

const EXACT = 2n ** 53n
function big (b) {
  return (b <= EXACT && b >= -EXACT) ? Number(b) : b.toString()
}
function norm (v) {
  if (v === undefined || v === null) return null
  if (typeof v === 'bigint') return big(v)
  if (Buffer.isBuffer(v)) return v.toString('hex')
  if (Array.isArray(v)) {
    // protodef's 64-bit numbers: two int32s with a BigInt valueOf.
    if (v.length === 2 && v.constructor !== Array && typeof v.valueOf() === 'bigint') return big(v.valueOf())
    return v.map(norm)
  }
  if (typeof v === 'object') {
    const o = {}
    for (const [k, x] of Object.entries(v)) o[k] = norm(x)
    return o
  }
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v)
  return v
}

module.exports = { norm }
if (require.main !== module) return

const deserializers = new Map()
const rl = readline.createInterface({ input: process.stdin })
rl.on('line', line => {
  if (!line.trim()) return
  const { version, hex } = JSON.parse(line)
  let d = deserializers.get(version)
  if (!d) {
    const { createDeserializer } = require(path.join(root, 'bedrock-protocol', 'src', 'transforms', 'serializer'))
    d = createDeserializer(version)
    deserializers.set(version, d)
  }
  try {
    const { data } = d.parsePacketBuffer(Buffer.from(hex, 'hex'))
    process.stdout.write(JSON.stringify({ name: data.name, params: norm(data.params) }) + '\n')
  } catch (e) {
    process.stdout.write(JSON.stringify({ error: String(e && e.message || e).slice(0, 300) }) + '\n')
  }
})
