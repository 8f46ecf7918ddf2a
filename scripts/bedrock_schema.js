// minecraft-data's schema of a Bedrock version as zero-valued packet
// parameters, for scripts/bedrock_peers.js and scripts/bedrock-vectors.js:
//   const { schemaOf } = require('./bedrock_schema')(mcData)
//   schemaOf('1.26.45').params('text', { type: 'chat', message: 'hi' })
'use strict'
module.exports = function (mcData) {
// A packet's parameters: the zero value of minecraft-data's schema for the
// version (every field present: numbers 0, strings '', arrays empty, the
// first name of a mapper, the case of a switch that the zero values select),
// with `set` on top. Fields the schema does not have are ignored by the
// serializer, so one `set` serves every version.
function schemaOf (ver) {
  const types = mcData('bedrock_' + ver).protocol.types
  const nums = new Set(['i8', 'u8', 'i16', 'u16', 'i32', 'u32', 'li16', 'lu16', 'li32', 'lu32', 'f32', 'f64', 'lf32', 'lf64', 'varint', 'zigzag32', 'byterot'])
  const bigs = new Set(['i64', 'u64', 'li64', 'lu64', 'varint64', 'zigzag64', 'varint128'])
  // A 64-bit field in one version is 32-bit in another (start_game's seed).
  function fit (z, v) {
    if (typeof z === 'bigint' && typeof v === 'number') return BigInt(v)
    if (typeof z === 'number' && typeof v === 'bigint') return Number(v)
    return v
  }
  function lookup (ref, ctx) {
    let c = ctx
    let p = ref
    while (p.startsWith('../')) { c = c.parent; p = p.slice(3) }
    return c.obj[p]
  }
  // `set`: values given for fields of this container (and of the anonymous
  // containers in it), used in place of zeros, so the switches that follow
  // them pick their cases.
  function zero (type, ctx, set = {}) {
    if (typeof type === 'string') {
      if (nums.has(type)) return 0
      if (bigs.has(type)) return 0n
      switch (type) {
        case 'bool': return false
        case 'string': case 'cstring': case 'ShortString': case 'LittleString': return ''
        case 'uuid': return '00000000-0000-0000-0000-000000000000'
        case 'nbt': case 'lnbt': return { type: 'compound', name: '', value: {} }
        case 'nbtLoop': return []
        case 'restBuffer': case 'ByteArray': return Buffer.alloc(0)
        case 'void': return undefined
      }
      if (types[type] === undefined || types[type] === 'native') throw new Error(`no zero value for ${type}`)
      return zero(types[type], ctx)
    }
    const [kind, opts] = type
    switch (kind) {
      case 'container': {
        const obj = {}
        const here = { obj, parent: ctx }
        for (const f of opts) {
          if (f.anon) Object.assign(obj, zero(f.type, here, set) || {})
          else obj[f.name] = f.name in set ? fit(zero(f.type, here), set[f.name]) : zero(f.type, here)
        }
        return obj
      }
      case 'array': return typeof opts.count === 'number' ? Array.from({ length: opts.count }, () => zero(opts.type, ctx)) : []
      case 'maybeIncompleteArray': return []
      case 'mapper': return opts.mappings['0'] ?? Object.values(opts.mappings)[0]
      case 'switch': {
        const v = opts.compareTo && !opts.compareTo.startsWith('$') ? lookup(opts.compareTo, ctx) : undefined
        if (opts.fields[String(v)] !== undefined) return zero(opts.fields[String(v)], ctx, set)
        return opts.default === undefined ? undefined : zero(opts.default, ctx, set)
      }
      case 'option': case 'optionalOnRemaining': return undefined
      case 'pstring': return ''
      case 'buffer': return Buffer.alloc(typeof opts.count === 'number' ? opts.count : 0)
      case 'bitflags': return {}
      case 'encapsulated': return zero(opts.type, ctx, set)
      case 'enum_size_based_on_values_len': return 0
      case 'bitfield': return Object.fromEntries(opts.map(f => [f.name, 0]))
      default: throw new Error(`no zero value for ${kind}`)
    }
  }
  const names = types.mcpe_packet[1][0].type[1].mappings
  return {
    has: name => types['packet_' + name] !== undefined,
    params: (name, set = {}) => zero(types['packet_' + name], null, set),
    name: id => names[String(id)] || null,
    names: () => Object.values(names)
  }
}
  return { schemaOf }
}
