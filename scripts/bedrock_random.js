// minecraft-data's schema of a Bedrock version as packet parameters with
// random, mostly non-zero values from a seed, for scripts/bedrock_peers.js
// (--every) and scripts/bedrock-vectors.js (every_packet_random.jsonl):
//   const { randomOf } = require('./bedrock_random')(mcData)
//   const r = randomOf('1.26.45', 7)
//   r.params('text')                      one draw (the same for the same seed)
//   r.packet('text', serializer, deserializer)
//                                         a draw that bedrock-protocol writes,
//                                         reads back and rewrites to the same bytes
//
// The values: numbers of every width over their range (small ones, middling
// ones and any bit pattern, negative ones where the type is signed; ProtoDef's
// varint is signed 32-bit, varint64 unsigned 64-bit), floats exact in f32
// for the 32-bit types, strings of 1 to 12 printable characters (now and then
// one outside ASCII, never in a latin1 string), random UUIDs, arrays of 1 to 3
// elements (a fixed count as given; a count that is another field sets that
// field), small buffers, NBT compounds of a few tags of different types, a
// random name of a mapper, a random subset of bitflags, bitfields within their
// widths, options present seven times in ten. A switch picks a random case: the
// field it compares is set to one of its keys (as the other fields, a mapper
// name, a boolean or a number) or left as drawn, for the default.
// enum_size_based_on_values_len follows the count it depends on. A type with
// no random value here (a native one unknown to this file: minecraft-data's
// MapInfo) throws; `packet` then tries again and reports the packet skipped.
'use strict'
module.exports = function (mcData) {
// A 32-bit PRNG: a Weyl sequence through a 32-bit avalanche mix; next() is
// uniform in [0, 2^32).
function prng (seed) {
  let s = seed >>> 0
  const next = () => {
    s = (s + 0x9e3779b9) >>> 0
    let z = s
    z = Math.imul(z ^ (z >>> 16), 0x21f0aaad)
    z = Math.imul(z ^ (z >>> 15), 0x735a2d97)
    return (z ^ (z >>> 15)) >>> 0
  }
  const r = {
    u32: next,
    float: () => next() / 2 ** 32,
    int: (lo, hi) => lo + Math.floor(next() / 2 ** 32 * (hi - lo + 1)), // lo..hi
    chance: p => next() / 2 ** 32 < p,
    pick: list => list[Math.floor(next() / 2 ** 32 * list.length)],
    big: bits => { // uniform in [0, 2^bits)
      let v = 0n
      for (let b = 0; b < bits; b += 32) v = (v << 32n) | BigInt(next())
      return BigInt.asUintN(bits, v)
    }
  }
  return r
}
// FNV-1a of a string, to derive one seed per packet and attempt.
function hash (str) {
  let h = 0x811c9dc5
  for (const c of Buffer.from(str)) h = Math.imul(h ^ c, 0x01000193)
  return h >>> 0
}

// Integer types: [bits, signed]; 64-bit ones are BigInts.
const widths = list => Object.fromEntries(list.map(([name, bits, signed]) => [name, [bits, signed]]))
const INTS = widths([['i8', 8, true], ['u8', 8, false], ['li8', 8, true], ['lu8', 8, false],
  ['i16', 16, true], ['u16', 16, false], ['li16', 16, true], ['lu16', 16, false],
  ['i32', 32, true], ['u32', 32, false], ['li32', 32, true], ['lu32', 32, false],
  ['varint', 32, true], ['zigzag32', 32, true]])
const BIGS = widths([['i64', 64, true], ['li64', 64, true], ['u64', 64, false], ['lu64', 64, false],
  ['varint64', 64, false], ['zigzag64', 64, true], ['varint128', 128, false]])
const FLOATS = new Set(['f32', 'lf32'])
const DOUBLES = new Set(['f64', 'lf64'])
const STRINGS = new Set(['string', 'cstring'])
// Non-ASCII characters, one to four bytes of UTF-8.
const WIDE = ['é', 'ß', 'Ω', 'ж', '€', '日', '☃', '😀']

function randomOf (ver, seed = 1) {
  const types = mcData('bedrock_' + ver).protocol.types
  const names = types.mcpe_packet[1][0].type[1].mappings

  // A named type followed to what it is (a type given by name, or native).
  function resolve (type) {
    while (typeof type === 'string' && types[type] !== undefined && types[type] !== 'native') type = types[type]
    return type
  }
  // A switch key as ProtoDef compares it: true/false, numbers, or strings.
  function keyValue (k) {
    if (k === 'true') return true
    if (k === 'false') return false
    if (!isNaN(k)) return Number(k)
    return k
  }
  // A mapper's values as its reader gives them (minecraft-data's names,
  // numbers and booleans as such).
  function mapped (v) {
    if (v === 'true') return true
    if (v === 'false') return false
    if (!isNaN(v)) return Number(v)
    return v
  }
  // Whether value v can be written as type (the compared field of a switch).
  function fits (type, v) {
    const t = resolve(type)
    if (typeof t === 'string') {
      if (t === 'bool') return typeof v === 'boolean'
      if (INTS[t]) {
        const [bits, signed] = INTS[t]
        const lo = signed ? -(2 ** (bits - 1)) : 0
        return typeof v === 'number' && Number.isInteger(v) && v >= lo && v < lo + 2 ** bits
      }
      if (STRINGS.has(t)) return typeof v === 'string'
      return false
    }
    if (t[0] === 'mapper') return Object.values(t[1].mappings).map(mapped).includes(v)
    if (t[0] === 'pstring') return typeof v === 'string'
    return false
  }

  // One draw of a packet's parameters; `tame`: fewer random parts (options
  // absent, one element an array, empty NBT compounds, ASCII strings, switches
  // not steered), for a packet whose full draw does not read back.
  function draw (name, rnd, tame) {
    function int (bits, signed) {
      const c = rnd.u32() % 4
      let v
      if (c <= 1) v = rnd.int(1, 100)
      else if (c === 2) v = rnd.int(1, 2 ** Math.floor(bits / 2))
      else v = bits === 32 ? rnd.u32() : rnd.int(0, 2 ** bits - 1)
      if (signed) {
        if (c === 3) v = bits === 32 ? v | 0 : v - (v >= 2 ** (bits - 1) ? 2 ** bits : 0)
        else if (rnd.chance(0.3)) v = -v
      }
      return v === 0 ? 1 : v
    }
    function big (bits, signed) {
      const c = rnd.u32() % 4
      let v
      if (c <= 1) v = BigInt(rnd.int(1, 100))
      else if (c === 2) v = rnd.big(bits / 2)
      else v = rnd.big(bits)
      if (signed) {
        if (c === 3) v = BigInt.asIntN(bits, v)
        else if (rnd.chance(0.3)) v = -v
      }
      return v === 0n ? 1n : v
    }
    function f32 () {
      const v = rnd.chance(0.6) ? rnd.int(1, 16384) / 16 : Math.fround(rnd.float() * 1e6 + 1)
      return rnd.chance(0.3) ? -v : v
    }
    function string (ascii) {
      const n = rnd.int(1, 12)
      let s = ''
      for (let i = 0; i < n; i++) s += String.fromCharCode(rnd.int(0x20, 0x7e))
      if (!ascii && !tame && rnd.chance(0.15)) s = s.slice(0, -1) + rnd.pick(WIDE)
      return s
    }
    function bytes (n) {
      const b = Buffer.alloc(n)
      for (let i = 0; i < n; i++) b[i] = rnd.int(0, 255)
      return b.length && b.every(x => x === 0) ? Buffer.from([1, ...b.subarray(1)]) : b
    }
    function uuid () {
      const h = bytes(16).toString('hex')
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
    }
    // An NBT compound of two or three tags of different types (one nested
    // compound at most), as prismarine-nbt has them: `varint` (Bedrock's
    // network NBT) has longs as BigInts, little-endian NBT as [hi, lo].
    function nbt (varint, depth = 0) {
      const value = {}
      if (!tame) {
        const kinds = ['byte', 'short', 'int', 'long', 'float', 'double', 'string', 'list', 'intArray', 'compound']
        const n = rnd.int(2, 3)
        for (let i = 0; i < n; i++) {
          const kind = rnd.pick(depth ? kinds.slice(0, 7) : kinds)
          const key = string(true) + i
          switch (kind) {
            case 'byte': value[key] = { type: kind, value: int(8, true) }; break
            case 'short': value[key] = { type: kind, value: int(16, true) }; break
            case 'int': value[key] = { type: kind, value: int(32, true) }; break
            case 'long': {
              const v = big(64, true)
              value[key] = { type: kind, value: varint ? v : [Number(BigInt.asIntN(32, v >> 32n)), Number(BigInt.asIntN(32, v))] }
              break
            }
            case 'float': value[key] = { type: kind, value: f32() }; break
            case 'double': value[key] = { type: kind, value: rnd.float() * 1000 - 500 }; break
            case 'string': value[key] = { type: kind, value: string() }; break
            case 'list': value[key] = { type: kind, value: { type: 'int', value: [int(32, true), int(32, true)] } }; break
            case 'intArray': value[key] = { type: kind, value: [int(32, true), int(32, true), int(32, true)] }; break
            case 'compound': value[key] = { type: kind, value: nbt(varint, depth + 1).value }; break
          }
        }
      }
      return { type: 'compound', name: '', value }
    }
    // A bitflags value: a random subset of its flags that the type can hold.
    function bitflags ({ type, flags, shift, big: isBig }) {
      const t = resolve(type)
      let entries
      if (Array.isArray(flags)) entries = flags.map((f, k) => [f, isBig ? 1n << BigInt(k) : 1 << k])
      else if (shift) entries = Object.entries(flags).map(([f, k]) => [f, isBig ? 1n << BigInt(k) : 1 << k])
      else entries = Object.entries(flags).map(([f, v]) => [f, isBig ? BigInt(v) : v])
      const [bits, signed] = INTS[t] || BIGS[t] || [32, true]
      // (The flags are OR-ed as JavaScript numbers: bit 31 is negative, which
      // an unsigned 32-bit writer refuses; a BigInt past the type's range.)
      const fit = v => isBig
        ? v < 1n << BigInt(signed ? bits - 1 : bits)
        : bits === 32 ? signed || v > 0 : v > 0 && v < 2 ** (signed ? bits - 1 : bits)
      const value = {}
      for (const [f, v] of entries) if (fit(v) && rnd.chance(0.5)) value[f] = true
      return value
    }
    // The context of a container: its object so far, its fields' types,
    // the fields a count or a switch already relies on.
    function scope (obj, parent) {
      return { obj, types: {}, fixed: new Set(), parent }
    }
    // Where a field a count or a switch names lives (ProtoDef's getField:
    // `../` up a container, then the innermost container that has it).
    function locate (ref, ctx) {
      let c = ctx
      let p = ref
      while (p.startsWith('../')) { c = c.parent; p = p.slice(3) }
      for (; c; c = c.parent) {
        if (Object.prototype.hasOwnProperty.call(c.obj, p)) return { c, name: p }
      }
      return null
    }
    // A count that another field holds: set it (once) to a small one.
    function count (ref, ctx, n) {
      const at = locate(ref, ctx)
      if (!at) throw new Error(`no field ${ref} for a count`)
      if (!at.c.fixed.has(at.name)) {
        at.c.obj[at.name] = n ?? (tame ? 1 : rnd.int(1, 3))
        at.c.fixed.add(at.name)
      }
      return at.c.obj[at.name]
    }
    // A switch's case: a compareTo that is a field may be set to one of its
    // keys (or kept as drawn: another key or the default); one that is an
    // expression (`flags.has_x`, `a.b || a.c`) is evaluated as it stands.
    function choose (opts, ctx) {
      let v
      if (opts.compareTo === undefined) v = opts.compareToValue
      else if (/^(\.\.\/)*[A-Za-z_$][\w$]*$/.test(opts.compareTo)) {
        const at = locate(opts.compareTo, ctx)
        if (!at) throw new Error(`no field ${opts.compareTo} for a switch`)
        const ftype = at.c.types[at.name]
        if (!at.c.fixed.has(at.name)) {
          const keys = Object.keys(opts.fields).filter(k => !k.startsWith('/')).map(keyValue).filter(k => ftype === undefined || fits(ftype, k))
          if (!tame && keys.length && !rnd.chance(Math.max(1 / (keys.length + 1), opts.default ? 0.3 : 0))) at.c.obj[at.name] = rnd.pick(keys)
          at.c.fixed.add(at.name)
        }
        v = at.c.obj[at.name]
      } else {
        v = undefined
        for (const term of opts.compareTo.split('||')) {
          const [head, ...rest] = term.trim().split('.')
          const at = locate(head, ctx)
          let x = at ? at.c.obj[at.name] : undefined
          for (const p of rest) x = x?.[p]
          v = x
          if (v) break
        }
      }
      for (const k of Object.keys(opts.fields)) {
        if (!k.startsWith('/') && keyValue(k) === v) return opts.fields[k]
      }
      return opts.default ?? 'void'
    }
    // The fields of a container into obj (anonymous containers, switches and
    // bitfields inlined, as ProtoDef does).
    function fields (list, obj, ctx, depth) {
      for (const f of list) {
        if (f.anon) {
          const t = resolve(f.type)
          if (t[0] === 'container') fields(t[1], obj, ctx, depth)
          else if (t[0] === 'bitfield') Object.assign(obj, gen(t, ctx, depth))
          else if (t[0] === 'switch') {
            const c = resolve(choose(t[1], ctx))
            if (Array.isArray(c) && c[0] === 'container') fields(c[1], obj, scope(obj, ctx), depth + 1)
            else Object.assign(obj, gen(c, ctx, depth + 1) || {})
          } else throw new Error(`anonymous ${t[0]}`)
        } else {
          ctx.types[f.name] = f.type
          obj[f.name] = gen(f.type, ctx, depth + 1)
        }
      }
    }
    function gen (type, ctx, depth) {
      if (depth > 40) throw new Error('types nested too deep')
      if (typeof type === 'string') {
        if (INTS[type]) return int(...INTS[type])
        if (BIGS[type]) return big(...BIGS[type])
        if (FLOATS.has(type)) return f32()
        if (DOUBLES.has(type)) return (rnd.float() - 0.5) * 2 ** rnd.int(1, 40)
        if (STRINGS.has(type)) return string()
        switch (type) {
          case 'bool': return rnd.chance(0.5)
          case 'void': return undefined
          case 'uuid': return uuid()
          case 'byterot': return rnd.int(1, 255) * (360 / 256) // a byte of 1/256 turns
          case 'nbt': return nbt(true)
          case 'lnbt': return nbt(false)
          case 'nbtLoop': return Array.from({ length: tame ? 1 : rnd.int(1, 2) }, () => nbt(true))
          case 'restBuffer': return bytes(rnd.int(1, 8))
        }
        if (types[type] === undefined || types[type] === 'native') throw new Error(`no random value for ${type}`)
        return gen(types[type], ctx, depth)
      }
      const [kind, opts] = type
      switch (kind) {
        case 'container': {
          const obj = {}
          fields(opts, obj, scope(obj, ctx), depth)
          return obj
        }
        case 'array': case 'maybeIncompleteArray': {
          let n
          if (typeof opts.count === 'number') n = opts.count
          else if (typeof opts.count === 'string') n = count(opts.count, ctx)
          else n = tame || depth > 12 ? 1 : rnd.int(1, 3)
          return Array.from({ length: n }, () => gen(opts.type, ctx, depth + 1))
        }
        case 'mapper': {
          const t = resolve(opts.type)
          // Key 0 is written as its name (ProtoDef's `map[v] || v`), which a
          // 64-bit writer does not take.
          const keys = Object.keys(opts.mappings).filter(k => !(BIGS[t] && Number(k) === 0))
          return mapped(opts.mappings[rnd.pick(keys)])
        }
        case 'switch': return gen(choose(opts, ctx), ctx, depth + 1)
        case 'option': case 'optionalOnRemaining':
          return !tame && rnd.chance(0.7) ? gen(opts.type || opts, ctx, depth + 1) : undefined
        case 'pstring': {
          const s = string(opts.encoding === 'latin1')
          return typeof opts.count === 'number' ? s.padEnd(opts.count, 'x').slice(0, opts.count) : s
        }
        case 'buffer':
          if (typeof opts.count === 'number') return bytes(opts.count)
          if (typeof opts.count === 'string') return bytes(count(opts.count, ctx))
          return bytes(rnd.int(1, tame ? 4 : 8))
        case 'bitflags': return bitflags(opts)
        case 'bitfield': return Object.fromEntries(opts.map(({ name, size, signed }) => {
          const v = rnd.int(0, 2 ** size - 1)
          return [name, signed && v >= 2 ** (size - 1) ? v - 2 ** size : v]
        }))
        case 'encapsulated': return gen(opts.type, ctx, depth + 1)
        // bedrock-protocol writes the width of command enum indices from
        // values_len (the count of enum_values after it): a byte up to 256
        // values, a short past. values_len is set here (once) so that both
        // widths come up.
        case 'enum_size_based_on_values_len': {
          const n = count('values_len', ctx, tame || rnd.chance(0.7) ? rnd.int(1, 3) : rnd.int(257, 260))
          return n <= 0x100 ? 'byte' : n <= 0x10000 ? 'short' : 'int'
        }
        default: throw new Error(`no random value for ${kind}`)
      }
    }
    return gen(types['packet_' + name], null, 0)
  }

  // Draw `attempt` of a packet (a seed of its own from the seed, the version,
  // the name and the attempt); the last of `tries` tame.
  function params (name, attempt = 0, tries = 4) {
    const rnd = prng(hash(`${seed}/${ver}/${name}/${attempt}`))
    return draw(name, rnd, attempt >= tries - 1)
  }
  // A draw that passes: bedrock-protocol's serializer writes it, its
  // deserializer reads it back, and the read-back writes the same bytes.
  // { params, buffer, read (the read-back params), attempt, tame,
  //   whole (the reader took every byte) } or { error } after `tries`.
  function packet (name, serializer, deserializer, tries = 4) {
    let error
    for (let attempt = 0; attempt < tries; attempt++) {
      try {
        const p = params(name, attempt, tries)
        const buffer = serializer.createPacketBuffer({ name, params: p })
        const { data, metadata } = deserializer.parsePacketBuffer(buffer)
        if (data.name !== name) throw new Error(`read back as ${data.name}`)
        const again = serializer.createPacketBuffer({ name, params: data.params })
        if (!again.equals(buffer)) throw new Error('the read-back writes other bytes')
        return { params: p, buffer, read: data.params, attempt, tame: attempt >= tries - 1, whole: metadata.size === buffer.length }
      } catch (e) {
        error = String((e && e.message) || e).split('\n')[0].slice(0, 200)
      }
    }
    return { error }
  }
  return {
    has: name => types['packet_' + name] !== undefined,
    params,
    packet,
    name: id => names[String(id)] || null,
    names: () => Object.values(names)
  }
}
  return { randomOf }
}
