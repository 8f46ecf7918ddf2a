#!/usr/bin/env node
// Test vectors for the hand decoders of src/bedrock/packets.rs, serialised by
// bedrock-protocol (npm, MIT) itself: for each layout generation, the packets
// below with the parameters given, through bedrock-protocol's compiled
// serializer of that version (minecraft-data's schema), as the bytes it
// would send; and StartGame with its level settings set in every version
// minecraft-data has, to src/bedrock/testdata/start_game.jsonl
// ({"version", "protocol", "hex"}, the values in START_GAME below).
// Written to src/bedrock/testdata/packets.jsonl, one per line:
//   {"version": "1.21.50", "protocol": 766, "name": "transfer",
//    "params": {...}, "hex": "55..."}
// (params as given: the zero values of the other fields are not written).
// And every packet type of a few versions, with its fields as
// bedrock-protocol reads them back, zero-valued (every_packet.jsonl) and
// with random values from a fixed seed (every_packet_random.jsonl); see
// buildEveryPacket and buildEveryRandom below.
//
//   node scripts/bedrock-vectors.js [DIR]    (scripts/bedrock-setup.sh first)
//   node scripts/bedrock-vectors.js --check  the committed files are what
//                                            bedrock-protocol makes now
'use strict'
const fs = require('fs')
const path = require('path')

const root = process.env.BEDROCK_NODE || path.join(__dirname, '..', 'target', 'bedrock-node', 'node_modules')
const out = path.join(__dirname, '..', 'src', 'bedrock', 'testdata', 'packets.jsonl')
const mcData = require(path.join(root, 'minecraft-data'))
const { createSerializer } = require(path.join(root, 'bedrock-protocol', 'src', 'transforms', 'serializer'))
const { schemaOf } = require('./bedrock_schema')(mcData)

// A version of each layout of the six packets (minecraft-data's folders).
const VERSIONS = ['1.16.201', '1.17.10', '1.18.30', '1.19.1', '1.20.30', '1.20.71', '1.20.80', '1.21.0',
  '1.21.20', '1.21.30', '1.21.42', '1.21.50', '1.21.90', '1.21.130', '1.26.0', '1.26.45']

const PACK = 'c0ffee00-1234-4abc-8def-0123456789ab'
function packets (version, has) {
  const texture = {
    uuid: PACK,
    version: '1.2.3',
    size: 40960n,
    content_key: '',
    sub_pack_name: 'hd',
    content_identity: '',
    has_scripts: false,
    addon_pack: false,
    rtx_enabled: true,
    cdn_url: 'https://cdn.example.net/p'
  }
  const behaviour = { ...texture, uuid: 'b0b0b0b0-0000-4000-8000-000000000001', sub_pack_name: '', has_scripts: true }
  return [
    ['text', { type: 'chat', category: 'authored', needs_translation: false, source_name: 'Alex', message: 'hi there', xuid: '2535', platform_chat_id: '', has_filtered_message: false, filtered_message: '' }],
    ['text', { type: 'translation', category: 'parameters', needs_translation: true, message: '%multiplayer.player.joined', parameters: ['Alex'], xuid: '', platform_chat_id: '' }],
    ['text', { type: 'system', category: 'message_only', message: 'server restarting', xuid: '', platform_chat_id: '' }],
    ['transfer', {
      server_address: 'play.example.net',
      port: 19133,
      reload_world: true,
      gatherings_configuration: { // 1.26.40 on
        experience_id: 'e0e0e0e0-1111-4222-8333-444444444444',
        experience_name: 'Lobby',
        experience_world_name: 'Hub',
        creator_id: 'creator',
        target_id: '7a7a7a7a-5555-4666-8777-888888888888',
        server_id: 'srv-1'
      }
    }],
    ['resource_packs_info', {
      must_accept: true,
      has_scripts: true,
      force_server_packs: true,
      has_addons: false,
      disable_vibrant_visuals: true,
      world_template: { uuid: '00000000-0000-0000-0000-000000000000', version: '' },
      behaviour_packs: [behaviour],
      texture_packs: [texture],
      resource_pack_links: [{ id: PACK, url: 'https://cdn.example.net/p' }]
    }],
    ['resource_pack_stack', {
      must_accept: true,
      behavior_packs: [{ uuid: 'b0b0b0b0-0000-4000-8000-000000000001', version: '1.0.0', name: '' }],
      resource_packs: [{ uuid: PACK, version: '1.2.3', name: '' }],
      game_version: '1.21.0',
      experiments: [{ name: 'data_driven_items', enabled: true }],
      experiments_previously_used: false,
      has_editor_packs: false
    }],
    ['resource_pack_client_response', { response_status: 'send_packs', response_status_name: 'send_packs', resourcepackids: [PACK + '_1.2.3'] }],
    ['start_game', { entity_id: -7n, runtime_entity_id: 7n, player_gamemode: 'adventure', player_position: { x: 1.5, y: 70, z: -3.25 }, spawn: { x: 1.5, y: 70, z: -3.25 }, rotation: { x: 10, z: 90 }, seed: 987654321n }]
  ]
}

// StartGame's level settings, up to the enchantment seed, in every version
// minecraft-data has (they change in 17 of them): src/bedrock/testdata/start_game.jsonl.
const ALL_VERSIONS = Object.keys(mcData.versionsByMinecraftVersion.bedrock)
  .filter(v => /^1\.(1[6-9]|2\d)\./.test(v) && mcData('bedrock_' + v)?.protocol)
  .sort((a, b) => mcData('bedrock_' + a).version.version - mcData('bedrock_' + b).version.version || (a < b ? -1 : 1))
const START_GAME = {
  entity_id: -7n,
  runtime_entity_id: 7n,
  player_gamemode: 'adventure',
  player_position: { x: 1.5, y: 70, z: -3.25 },
  spawn: { x: 1.5, y: 70, z: -3.25 },
  rotation: { x: 10, z: 90 },
  seed: 987654321n,
  biome_type: 3,
  biome_name: 'plains',
  generator: 1,
  world_gamemode: 'creative',
  hardcore: true,
  difficulty: 2,
  spawn_position: { x: -5, y: 64, z: 12 },
  achievements_disabled: true,
  created_in_editor: true,
  day_cycle_stop_time: 6000,
  rain_level: 0.5,
  is_multiplayer: true,
  enable_commands: true,
  gamerules: [
    { name: 'dodaylightcycle', editable: true, type: 'bool', value: true },
    { name: 'randomtickspeed', editable: false, type: 'int', value: 3 },
    { name: 'fakefloat', editable: false, type: 'float', value: 1.5 }
  ],
  experiments: [{ name: 'data_driven_items', enabled: true }],
  server_chunk_tick_range: 4,
  game_version: '1.21.0',
  limited_world_width: 16,
  edu_resource_uri: { button_name: 'b', link_uri: 'u' },
  level_id: 'bGV2ZWw=',
  world_name: 'Dedicated Server',
  premium_world_template_id: '',
  is_trial: false,
  movement_authority: 'server',
  rewind_history_size: 40,
  server_authoritative_block_breaking: true,
  current_tick: 123456n,
  enchantment_seed: -99
}

function buildStartGame () {
  const lines = []
  for (const version of ALL_VERSIONS) {
    const schema = schemaOf(version)
    const serializer = createSerializer(version)
    const protocol = mcData('bedrock_' + version).version.version
    const params = schema.params('start_game', START_GAME)
    const buf = serializer.createPacketBuffer({ name: 'start_game', params })
    lines.push(JSON.stringify({ version, protocol, hex: buf.toString('hex') }))
  }
  return lines.join('\n') + '\n'
}

function build () {
  const lines = []
  for (const version of VERSIONS) {
    const schema = schemaOf(version)
    const serializer = createSerializer(version)
    const protocol = mcData('bedrock_' + version).version.version
    for (const [name, set] of packets(version)) {
      const params = schema.params(name, set)
      const buf = serializer.createPacketBuffer({ name, params })
      lines.push(JSON.stringify({ version, protocol, name, params: set, hex: buf.toString('hex') },
        (k, v) => typeof v === 'bigint' ? Number(v) : v))
    }
  }
  return lines.join('\n') + '\n'
}

// Every packet type of three versions with zero-valued parameters
// (bedrock_schema.js), as bedrock-protocol serialises it and as its own
// deserializer reads it back (normalised as scripts/bedrock-fields.js does):
// src/bedrock/testdata/every_packet.jsonl, for the schema decoder's tests.
const EVERY_VERSIONS = ['1.16.201', '1.21.50', '1.26.45']
function buildEveryPacket () {
  const { createDeserializer } = require(path.join(root, 'bedrock-protocol', 'src', 'transforms', 'serializer'))
  const { norm } = require('./bedrock-fields')
  const lines = []
  for (const version of EVERY_VERSIONS) {
    const schema = schemaOf(version)
    const serializer = createSerializer(version)
    const deserializer = createDeserializer(version)
    const protocol = mcData('bedrock_' + version).version.version
    const types = mcData('bedrock_' + version).protocol.types
    const names = Object.values(types.mcpe_packet[1].find(f => f.name === 'name').type[1].mappings)
    for (const name of names.sort()) {
      let hex, fields
      try {
        const buf = serializer.createPacketBuffer({ name, params: schema.params(name) })
        hex = buf.toString('hex')
        fields = norm(deserializer.parsePacketBuffer(buf).data.params)
      } catch (e) {
        continue // no zero value for one of its types (a native one), or it does not read back
      }
      lines.push(JSON.stringify({ version, protocol, name, hex, fields }))
    }
    // Negative varints (ProtoDef's varint is signed 32-bit): a block below y 0.
    const below = { x: -5, y: -45, z: 12 } // named coordinates before 1.20
    for (const [name, set] of [['update_block', { position: below, coordinates: below }]]) {
      const buf = serializer.createPacketBuffer({ name, params: schema.params(name, set) })
      const fields = norm(deserializer.parsePacketBuffer(buf).data.params)
      lines.push(JSON.stringify({ version, protocol, name, hex: buf.toString('hex'), fields }))
    }
  }
  return lines.join('\n') + '\n'
}

// Every packet type of three versions again, with random values from a
// fixed seed (scripts/bedrock_random.js: numbers over their ranges, negative
// ones, strings, arrays of a few elements, NBT, the cases of switches),
// those that bedrock-protocol writes, reads back and rewrites to the same
// bytes: src/bedrock/testdata/every_packet_random.jsonl, lines as in
// every_packet.jsonl. A packet whose draws all fail is left out (reported
// on stderr); one that passed only in the tame last draw is counted.
const RANDOM_VERSIONS = ['1.21.50', '1.21.130', '1.26.45']
const RANDOM_SEED = 1
function buildEveryRandom () {
  const { createDeserializer } = require(path.join(root, 'bedrock-protocol', 'src', 'transforms', 'serializer'))
  const { norm } = require('./bedrock-fields')
  const { randomOf } = require('./bedrock_random')(mcData)
  const lines = []
  for (const version of RANDOM_VERSIONS) {
    const random = randomOf(version, RANDOM_SEED)
    const serializer = createSerializer(version)
    const deserializer = createDeserializer(version)
    const protocol = mcData('bedrock_' + version).version.version
    const skipped = []
    let tame = 0
    for (const name of random.names().sort()) {
      const p = random.packet(name, serializer, deserializer)
      if (p.error) {
        skipped.push(`${name} (${p.error})`)
        continue
      }
      if (p.tame) tame++
      lines.push(JSON.stringify({ version, protocol, name, hex: p.buffer.toString('hex'), fields: norm(p.read) }))
    }
    if (skipped.length || tame) console.error(`bedrock-vectors: random ${version}: ${skipped.length} skipped${skipped.length ? ': ' + skipped.join(', ') : ''}; ${tame} only tame`)
  }
  return lines.join('\n') + '\n'
}

const outStartGame = path.join(path.dirname(out), 'start_game.jsonl')
const outEvery = path.join(path.dirname(out), 'every_packet.jsonl')
const outRandom = path.join(path.dirname(out), 'every_packet_random.jsonl')
for (const [file, text] of [[out, build()], [outStartGame, buildStartGame()], [outEvery, buildEveryPacket()], [outRandom, buildEveryRandom()]]) {
  if (process.argv[2] === '--check') {
    const have = fs.readFileSync(file, 'utf8')
    if (have !== text) {
      console.error(`bedrock-vectors: ${file} is not what bedrock-protocol serialises now`)
      process.exit(1)
    }
    console.log(`${file}: ${text.split('\n').length - 1} vectors, as bedrock-protocol serialises them`)
  } else {
    const dest = process.argv[2] ? path.join(process.argv[2], path.basename(file)) : file
    fs.mkdirSync(path.dirname(dest), { recursive: true })
    fs.writeFileSync(dest, text)
    console.log(`${dest}: ${text.split('\n').length - 1} vectors`)
  }
}
