//! Hand decoders for the game packets after the login that a person
//! following a connection wants: ResourcePacksInfo, ResourcePackStack,
//! ResourcePackClientResponse, StartGame (its first fields), Text and
//! Transfer. Layouts by protocol number, from minecraft-data's protocol
//! definitions of each version (each constant names the first version of a
//! layout); an unknown protocol reads as the newest.

use serde_json::{json, Map, Value};

use super::body::Body;

pub(crate) const RESOURCE_PACKS_INFO: u16 = 6;
pub(crate) const RESOURCE_PACK_STACK: u16 = 7;
pub(crate) const RESOURCE_PACK_CLIENT_RESPONSE: u16 = 8;
pub(crate) const TEXT: u16 = 9;
pub(crate) const START_GAME: u16 = 11;
pub(crate) const TRANSFER: u16 = 85;

/// Entries of a pack list, a pack-id list or the experiments at most: past
/// it the list is an `error` (a forged count), not an allocation.
const MAX_ENTRIES: usize = 4096;

// The first protocol number of each layout change (minecraft-data).
const P1_16_210: u32 = 428;
const P1_17_0: u32 = 440;
const P1_17_10: u32 = 448;
const P1_17_30: u32 = 465;
const P1_18_30: u32 = 503;
const P1_19_10: u32 = 534;
const P1_19_20: u32 = 544;
const P1_19_60: u32 = 567;
const P1_19_80: u32 = 582;
const P1_20_30: u32 = 618;
const P1_20_71: u32 = 662;
const P1_20_80: u32 = 671;
const P1_21_0: u32 = 685;
const P1_21_20: u32 = 712;
const P1_21_30: u32 = 729;
const P1_21_42: u32 = 748;
const P1_21_50: u32 = 766;
const P1_21_90: u32 = 818;
const P1_21_111: u32 = 844;
const P1_21_130: u32 = 898;
const P1_26_0: u32 = 924;
const P1_26_10: u32 = 944;
const P1_26_30: u32 = 1001;
const P1_26_40: u32 = 2168;
const P1_26_60: u32 = 2225;

/// The fields of packet `id` into `f`: `None` when `id` is not one of
/// these; `Some(None)` when the body is cut short or malformed (what
/// decoded stays in `f`).
pub(super) fn decode(
    id: u16,
    r: &mut Body,
    f: &mut Map<String, Value>,
    protocol: Option<u32>,
) -> Option<Option<()>> {
    let p = protocol.unwrap_or(u32::MAX);
    Some(match id {
        RESOURCE_PACKS_INFO => resource_packs_info(r, f, p),
        RESOURCE_PACK_STACK => resource_pack_stack(r, f, p),
        RESOURCE_PACK_CLIENT_RESPONSE => resource_pack_client_response(r, f, p),
        TEXT => text(r, f, p),
        START_GAME => start_game(r, f, p),
        TRANSFER => transfer(r, f, p),
        _ => return None,
    })
}

fn put(f: &mut Map<String, Value>, k: &str, v: impl Into<Value>) {
    f.insert(k.into(), v.into());
}

/// A list's count, bounded.
fn count(n: usize) -> Option<usize> {
    (n <= MAX_ENTRIES).then_some(n)
}

/// The count of a pack list or pack-id list: a varint from 1.26.40, a
/// little-endian u16 before; bounded.
fn pack_count(r: &mut Body, p: u32) -> Option<usize> {
    count(if p >= P1_26_40 {
        r.varu32()? as usize
    } else {
        usize::from(r.u16_le()?)
    })
}

fn resource_packs_info(r: &mut Body, f: &mut Map<String, Value>, p: u32) -> Option<()> {
    put(f, "must_accept", r.bool()?);
    if p >= P1_20_71 {
        put(f, "has_addons", r.bool()?);
    }
    put(f, "has_scripts", r.bool()?);
    if (P1_17_10..P1_21_30).contains(&p) {
        put(f, "force_server_packs", r.bool()?);
    }
    if p >= P1_21_90 {
        put(f, "disable_vibrant_visuals", r.bool()?);
    }
    if p >= P1_21_50 {
        let uuid = r.uuid()?;
        let version = r.string()?;
        put(
            f,
            "world_template",
            serde_json::json!({"uuid": uuid, "version": version}),
        );
    }
    if p < P1_21_30 {
        let packs = pack_infos(r, p, false)?;
        put(f, "behaviour_packs", packs);
    }
    let packs = pack_infos(r, p, true)?;
    put(f, "texture_packs", packs);
    if (P1_20_30..P1_21_42).contains(&p) {
        let n = count(r.varu32()? as usize)?;
        let mut links = Vec::with_capacity(n);
        for _ in 0..n {
            let id = r.string()?;
            let url = r.string()?;
            links.push(serde_json::json!({"id": id, "url": url}));
        }
        put(f, "resource_pack_links", links);
    }
    Some(())
}

/// BehaviourPackInfos (`texture: false`) or TexturePackInfos: per pack its
/// uuid, version, size and the flags the version has.
fn pack_infos(r: &mut Body, p: u32, texture: bool) -> Option<Vec<Value>> {
    let n = pack_count(r, p)?;
    let mut packs = Vec::with_capacity(n);
    for _ in 0..n {
        let mut e = Map::new();
        let uuid = if p >= P1_21_50 {
            r.uuid()?
        } else {
            r.string()?.to_string()
        };
        put(&mut e, "uuid", uuid);
        put(&mut e, "version", r.string()?);
        put(&mut e, "size", r.u64_le()?);
        let _content_key = r.string()?;
        put(&mut e, "sub_pack_name", r.string()?);
        put(&mut e, "content_identity", r.string()?);
        put(&mut e, "has_scripts", r.bool()?);
        if p >= P1_21_20 {
            put(&mut e, "addon_pack", r.bool()?);
        }
        if texture {
            put(&mut e, "rtx_enabled", r.bool()?);
            if p >= P1_21_42 {
                put(&mut e, "cdn_url", r.string()?);
            }
        }
        packs.push(Value::Object(e));
    }
    Some(packs)
}

fn resource_pack_stack(r: &mut Body, f: &mut Map<String, Value>, p: u32) -> Option<()> {
    put(f, "must_accept", r.bool()?);
    if p < P1_21_130 {
        let packs = id_versions(r)?;
        put(f, "behavior_packs", packs);
    }
    let packs = id_versions(r)?;
    put(f, "resource_packs", packs);
    put(f, "game_version", r.string()?);
    let n = count(r.u32_le()? as usize)?;
    let mut experiments = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.string()?;
        let enabled = r.bool()?;
        experiments.push(serde_json::json!({"name": name, "enabled": enabled}));
    }
    put(f, "experiments", experiments);
    put(f, "experiments_previously_used", r.bool()?);
    if p >= P1_20_80 {
        put(f, "has_editor_packs", r.bool()?);
    }
    Some(())
}

/// ResourcePackIdVersions: uuid, version, name of each pack.
fn id_versions(r: &mut Body) -> Option<Vec<Value>> {
    let n = count(r.varu32()? as usize)?;
    let mut packs = Vec::with_capacity(n);
    for _ in 0..n {
        let uuid = r.string()?;
        let version = r.string()?;
        let name = r.string()?;
        packs.push(serde_json::json!({"uuid": uuid, "version": version, "name": name}));
    }
    Some(packs)
}

fn resource_pack_client_response(r: &mut Body, f: &mut Map<String, Value>, p: u32) -> Option<()> {
    // 1.26.40 on: a varint from 0 (refused), then the name as a string,
    // and pack ids only with send_packs; before, a byte from 0 (none).
    let (status, name) = if p >= P1_26_40 {
        let s = r.varu32()?;
        (
            s,
            ["refused", "send_packs", "have_all_packs", "completed"].get(s as usize),
        )
    } else {
        let s = u32::from(r.u8()?);
        (
            s,
            [
                "none",
                "refused",
                "send_packs",
                "have_all_packs",
                "completed",
            ]
            .get(s as usize),
        )
    };
    put(f, "response_status", status);
    if let Some(n) = name {
        put(f, "response_status_name", *n);
    }
    if p >= P1_26_40 {
        put(f, "response_text", r.string()?);
        if status != 1 {
            return Some(());
        }
    }
    let n = pack_count(r, p)?;
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        ids.push(Value::from(r.string()?));
    }
    put(f, "pack_ids", ids);
    Some(())
}

/// Text types by number (TextType in minecraft-data).
const TEXT_TYPES: [&str; 12] = [
    "raw",
    "chat",
    "translation",
    "popup",
    "jukebox_popup",
    "tip",
    "system",
    "whisper",
    "announcement",
    "json_whisper",
    "json",
    "json_announcement",
];

fn text(r: &mut Body, f: &mut Map<String, Value>, p: u32) -> Option<()> {
    let kind = if p >= P1_21_130 {
        put(f, "needs_translation", r.bool()?);
        let category = r.u8()?;
        put(f, "category", category);
        if let Some(c) = ["message_only", "authored", "parameters"].get(usize::from(category)) {
            put(f, "category_name", *c);
        }
        if p < P1_26_0 {
            // 1.21.130 alone: the category's type names, as strings.
            let n = match category {
                0 => 6,
                1 | 2 => 3,
                _ => return None,
            };
            for _ in 0..n {
                r.string()?;
            }
        }
        r.u8()?
    } else {
        let kind = r.u8()?;
        put(f, "needs_translation", r.bool()?);
        kind
    };
    put(f, "type", kind);
    let name = TEXT_TYPES.get(usize::from(kind)).copied();
    if let Some(n) = name {
        put(f, "type_name", n);
    }
    match name {
        Some("chat" | "whisper" | "announcement") => {
            put(f, "source_name", r.string()?);
            put(f, "message", r.string()?);
        }
        Some("translation" | "popup" | "jukebox_popup") => {
            put(f, "message", r.string()?);
            let n = count(r.varu32()? as usize)?;
            let mut params = Vec::with_capacity(n);
            for _ in 0..n {
                params.push(Value::from(r.string()?));
            }
            put(f, "parameters", params);
        }
        Some(_) => put(f, "message", r.string()?),
        None => return None,
    }
    put(f, "xuid", r.string()?);
    put(f, "platform_chat_id", r.string()?);
    if p >= P1_21_130 {
        if r.bool()? {
            put(f, "filtered_message", r.string()?);
        }
    } else if p >= P1_21_0 {
        put(f, "filtered_message", r.string()?);
    }
    Some(())
}

/// GameMode names by number.
fn game_mode(v: i32) -> Option<&'static str> {
    [
        "survival",
        "creative",
        "adventure",
        "survival_spectator",
        "creative_spectator",
        "fallback",
        "spectator",
    ]
    .get(usize::try_from(v).ok()?)
    .copied()
}

/// StartGame up to the enchantment seed: the player's entity, game mode,
/// position and rotation, then the level settings (world, spawn, game
/// rules, experiments, level id and name, movement). It stops there, before
/// the block and item tables; and, without an `error`, at an experimental
/// gameplay override that is set, whose length the sources disagree on.
fn start_game(r: &mut Body, f: &mut Map<String, Value>, p: u32) -> Option<()> {
    put(f, "entity_id", r.zigzag64()?);
    put(f, "runtime_entity_id", r.varu64()?);
    let mode = r.zigzag32()?;
    put(f, "player_gamemode", mode);
    if let Some(n) = game_mode(mode) {
        put(f, "player_gamemode_name", n);
    }
    put(f, "player_position", vec3(r)?);
    let (pitch, yaw) = (float(r)?, float(r)?);
    put(f, "rotation", json!({"pitch": pitch, "yaw": yaw}));
    if p >= P1_18_30 {
        put(f, "seed", r.u64_le()?);
    } else {
        put(f, "seed", r.zigzag32()?);
    }
    let biome_type = r.u16_le()? as i16;
    put(f, "biome_type", biome_type);
    put(f, "biome_name", r.string()?);
    let dimension = r.zigzag32()?;
    put(f, "dimension", dimension);
    if let Some(n) = ["overworld", "nether", "end"].get(usize::try_from(dimension).unwrap_or(9)) {
        put(f, "dimension_name", *n);
    }
    put(f, "generator", r.zigzag32()?);
    let mode = r.zigzag32()?;
    put(f, "world_gamemode", mode);
    if let Some(n) = game_mode(mode) {
        put(f, "world_gamemode_name", n);
    }
    if p >= P1_20_80 {
        put(f, "hardcore", r.bool()?);
    }
    put(f, "difficulty", r.zigzag32()?);
    let x = r.zigzag32()?;
    // The spawn's y: unsigned until 1.26.10.
    let y = if p >= P1_26_10 {
        r.zigzag32()?
    } else {
        r.varu32()? as i32
    };
    let z = r.zigzag32()?;
    put(f, "spawn_position", json!({"x": x, "y": y, "z": z}));
    put(f, "achievements_disabled", r.bool()?);
    if p >= P1_20_30 {
        put(f, "editor_world_type", r.zigzag32()?);
    } else if p >= P1_19_10 {
        put(f, "editor_world", r.bool()?);
    }
    if p >= P1_19_80 {
        put(f, "created_in_editor", r.bool()?);
        put(f, "exported_from_editor", r.bool()?);
    }
    if p >= P1_26_60 {
        put(f, "editor_level_migration_version", r.u8()?);
    }
    put(f, "day_cycle_stop_time", r.zigzag32()?);
    let _edu_offer = if p >= P1_26_40 {
        i64::from(r.varu32()?)
    } else {
        i64::from(r.zigzag32()?)
    };
    let _edu_features_enabled = r.bool()?;
    let _edu_product_uuid = r.string()?;
    put(f, "rain_level", float(r)?);
    put(f, "lightning_level", float(r)?);
    let _confirmed_platform_locked_content = r.bool()?;
    put(f, "is_multiplayer", r.bool()?);
    put(f, "broadcast_to_lan", r.bool()?);
    let _xbox_live_broadcast_mode = r.varu32()?;
    let _platform_broadcast_mode = r.varu32()?;
    put(f, "enable_commands", r.bool()?);
    put(f, "is_texturepacks_required", r.bool()?);
    let rules = game_rules(r, p)?;
    put(f, "gamerules", rules);
    let n = count(r.u32_le()? as usize)?;
    let mut experiments = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.string()?;
        let enabled = r.bool()?;
        experiments.push(json!({"name": name, "enabled": enabled}));
    }
    put(f, "experiments", experiments);
    put(f, "experiments_previously_used", r.bool()?);
    put(f, "bonus_chest", r.bool()?);
    put(f, "map_enabled", r.bool()?);
    let permission = if p >= P1_19_10 {
        i32::from(r.u8()?)
    } else {
        r.zigzag32()?
    };
    put(f, "permission_level", permission);
    if let Some(n) =
        ["visitor", "member", "operator", "custom"].get(usize::try_from(permission).unwrap_or(9))
    {
        put(f, "permission_level_name", *n);
    }
    put(f, "server_chunk_tick_range", r.u32_le()? as i32);
    // Locked packs and templates, gamertags only, v1 villagers; then
    // persona and custom skins off (1.19.20), emote chat muted (1.19.60).
    let flags = 7 + if p >= P1_19_20 { 2 } else { 0 } + usize::from(p >= P1_19_60);
    r.take(flags)?;
    put(f, "game_version", r.string()?);
    put(f, "limited_world_width", r.u32_le()? as i32);
    put(f, "limited_world_length", r.u32_le()? as i32);
    put(f, "is_new_nether", r.bool()?);
    if p >= P1_17_30 {
        let _button_name = r.string()?;
        let _link_uri = r.string()?;
    }
    // A bool in minecraft-data, an optional bool (present, then the value)
    // in gophertunnel: the same byte when it is not set, else stop here.
    if r.u8()? != 0 {
        return Some(());
    }
    if p >= P1_19_20 {
        put(f, "chat_restriction_level", r.u8()?);
        put(f, "disable_player_interactions", r.bool()?);
    }
    if (P1_21_0..P1_26_0).contains(&p) {
        put(f, "server_identifier", r.string()?);
        put(f, "world_identifier", r.string()?);
        put(f, "scenario_identifier", r.string()?);
        if p >= P1_21_90 {
            put(f, "owner_identifier", r.string()?);
        }
    }
    if p >= P1_26_30 {
        put(f, "server_editor_connection_policy", r.zigzag32()?);
        put(f, "allow_anonymous_block_drops_in_editor_worlds", r.bool()?);
    }
    put(f, "level_id", r.string()?);
    put(f, "world_name", r.string()?);
    put(f, "premium_world_template_id", r.string()?);
    put(f, "is_trial", r.bool()?);
    // Movement: who is authoritative until 1.21.90 (the server since).
    if p < P1_21_90 {
        let authority = r.zigzag32()?;
        put(f, "movement_authority", authority);
        let names = if p >= P1_16_210 {
            ["client", "server", "server_with_rewind"]
        } else {
            ["client", "server", "server_v2_rewind"]
        };
        if let Some(n) = names.get(usize::try_from(authority).unwrap_or(9)) {
            put(f, "movement_authority_name", *n);
        }
    }
    if p >= P1_16_210 {
        put(f, "rewind_history_size", r.zigzag32()?);
        put(f, "server_authoritative_block_breaking", r.bool()?);
    }
    put(f, "current_tick", r.u64_le()? as i64);
    put(f, "enchantment_seed", r.zigzag32()?);
    Some(())
}

/// The game rules: name, whether players may change it (1.17.0 on) and its
/// value, whose int is zigzag until 1.21.111, a varint until 1.26.40 and a
/// little-endian i32 since.
fn game_rules(r: &mut Body, p: u32) -> Option<Vec<Value>> {
    let n = count(r.varu32()? as usize)?;
    let mut rules = Vec::with_capacity(n);
    for _ in 0..n {
        let mut g = Map::new();
        put(&mut g, "name", r.string()?);
        if p >= P1_17_0 {
            put(&mut g, "editable", r.bool()?);
        }
        let value: Value = match r.varu32()? {
            0 => Value::Null, // no value: gophertunnel reads it so
            1 => r.bool()?.into(),
            2 if p >= P1_26_40 => (r.u32_le()? as i32).into(),
            2 if p >= P1_21_111 => r.varu32()?.into(),
            2 => r.zigzag32()?.into(),
            3 => float(r)?.into(),
            _ => return None,
        };
        put(&mut g, "value", value);
        rules.push(Value::Object(g));
    }
    Some(rules)
}

fn vec3(r: &mut Body) -> Option<Value> {
    let (x, y, z) = (float(r)?, float(r)?, float(r)?);
    Some(json!({"x": x, "y": y, "z": z}))
}

/// A little-endian f32 as the f64 that prints as it does (65.62, not
/// 65.62000274658203).
fn float(r: &mut Body) -> Option<f64> {
    let v = r.f32_le()?;
    Some(v.to_string().parse().unwrap_or(f64::from(v)))
}

fn transfer(r: &mut Body, f: &mut Map<String, Value>, p: u32) -> Option<()> {
    put(f, "server_address", r.string()?);
    put(f, "port", r.u16_le()?);
    if p >= P1_21_30 {
        put(f, "reload_world", r.bool()?);
    }
    // 1.26.40 on: the gathering (experience) joined there, if any.
    if p >= P1_26_40 && r.bool()? {
        put(f, "gathering", gathering(r)?);
    }
    Some(())
}

/// GatheringJoinInfo: the experience's uuid and name, the world, the
/// creator, and the ids that are there (an absent option is no key).
fn gathering(r: &mut Body) -> Option<Value> {
    let mut g = Map::new();
    put(&mut g, "experience_id", r.uuid()?);
    put(&mut g, "experience_name", r.string()?);
    if r.bool()? {
        put(&mut g, "experience_world_id", r.uuid()?);
    }
    if r.bool()? {
        put(&mut g, "experience_world_name", r.string()?);
    }
    put(&mut g, "creator_id", r.string()?);
    if r.bool()? {
        put(&mut g, "target_id", r.uuid()?);
    }
    for k in ["scenario_id", "server_id"] {
        if r.bool()? {
            put(&mut g, k, r.string()?);
        }
    }
    Some(Value::Object(g))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A UUID that bedrock-protocol was given, as it is read from the bytes
    /// bedrock-protocol wrote (in the order of the string, where the game
    /// writes two little-endian halves): each half reversed.
    fn from_bp(uuid: &str) -> String {
        crate::wire::cursor::uuid_turned(uuid).expect("a UUID")
    }

    #[test]
    fn uuids_are_two_little_endian_halves() {
        let bytes: Vec<u8> = (0..16).collect();
        let uuid = Body::new(&bytes).uuid().unwrap();
        assert_eq!(uuid, "07060504-0302-0100-0f0e-0d0c0b0a0908");
        assert_eq!(
            from_bp("e0e0e0e0-1111-4222-8333-444444444444"),
            "22421111-e0e0-e0e0-4444-444444443383"
        );
    }

    /// The fields of a packet's body under `protocol`, as the game layer
    /// gives them (with an `error` when it is cut short).
    fn body_fields(id: u16, body: &[u8], protocol: Option<u32>) -> Option<Value> {
        let (mut r, mut f) = (Body::new(body), Map::new());
        if decode(id, &mut r, &mut f, protocol)?.is_none() {
            f.insert("error".into(), format!("cut short at {}", r.pos).into());
        }
        Some(Value::Object(f))
    }

    /// The fields decoded from a packet's hex (header included).
    fn fields(hex: &str, protocol: u32) -> Value {
        let b = crate::wire::cursor::parse_hex(hex).unwrap();
        let h = super::super::batch::Header::parse(&b).unwrap();
        body_fields(h.id, &b[h.len..], Some(protocol)).unwrap()
    }

    /// The packets bedrock-protocol sent in the bundled sessions
    /// (samples/*.packets.jsonl): 1.26.45 (protocol 2169) and 1.19.1 (527).
    fn sent(sample: &str, name: &str) -> Vec<String> {
        let text = match sample {
            "1.26.45" => include_str!("../../samples/bedrock-login.packets.jsonl"),
            _ => include_str!("../../samples/bedrock-1.19.1.packets.jsonl"),
        };
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["name"] == name)
            .map(|v| v["hex"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn the_packets_bedrock_protocol_sent() {
        for (version, protocol) in [("1.26.45", 2169), ("1.19.1", 527)] {
            let f = |name: &str| fields(&sent(version, name)[0], protocol);
            let t = f("text");
            assert_eq!(t["type_name"], "chat", "{version}: {t}");
            assert_eq!(t["source_name"], "Steve");
            assert_eq!(t["message"], "hello from raknet-dissect");
            assert!(t.get("error").is_none(), "{version}: {t}");
            let s = f("start_game");
            assert_eq!(s["entity_id"], 1, "{version}: {s}");
            assert_eq!(s["runtime_entity_id"], 1);
            assert_eq!(s["player_gamemode_name"], "creative");
            assert_eq!(s["player_position"]["y"], 65.62);
            assert_eq!(s["seed"], 1234);
            assert_eq!(s["spawn_position"], json!({"x": 0, "y": 64, "z": 0}));
            assert_eq!(s["level_id"], "raknet-dissect", "{version}: {s}");
            assert_eq!(s["world_name"], "raknet-dissect test world");
            assert_eq!(s["game_version"], "*");
            assert_eq!(s["server_chunk_tick_range"], 4);
            assert!(s.get("error").is_none(), "{version}: {s}");
            let i = f("resource_packs_info");
            assert_eq!(i["texture_packs"], serde_json::json!([]), "{version}: {i}");
            assert!(i.get("error").is_none(), "{version}: {i}");
            let st = f("resource_pack_stack");
            assert_eq!(st["game_version"], "*", "{version}: {st}");
            assert!(st.get("error").is_none(), "{version}: {st}");
            let c = f("resource_pack_client_response");
            assert_eq!(c["response_status_name"], "completed", "{version}: {c}");
            assert!(c.get("error").is_none(), "{version}: {c}");
        }
        let c = fields(&sent("1.26.45", "resource_pack_client_response")[0], 2169);
        assert_eq!(c["response_text"], "resourcepackstackfinished");
        // 1.26.45's chat also has its category (authored).
        let t = fields(&sent("1.26.45", "text")[0], 2169);
        assert_eq!(t["category_name"], "authored");
    }

    /// bedrock-protocol's own serialisation of each packet in 16 versions,
    /// one of each layout (scripts/bedrock-vectors.js): every field back.
    #[test]
    fn bedrock_protocol_vectors_of_every_layout() {
        let text = include_str!("testdata/packets.jsonl");
        let mut n = 0;
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let (name, set) = (v["name"].as_str().unwrap(), &v["params"]);
            let p = v["protocol"].as_u64().unwrap() as u32;
            let f = fields(v["hex"].as_str().unwrap(), p);
            let at = format!("{} {name}: {f}", v["version"]);
            assert!(f.get("error").is_none(), "{at}");
            match name {
                "text" => {
                    assert_eq!(f["type_name"], set["type"], "{at}");
                    assert_eq!(f["message"], set["message"], "{at}");
                    assert_eq!(f["xuid"], set["xuid"], "{at}");
                    if set["type"] == "chat" {
                        assert_eq!(f["source_name"], "Alex", "{at}");
                    }
                    if set["type"] == "translation" {
                        assert_eq!(f["parameters"], set["parameters"], "{at}");
                    }
                }
                "transfer" => {
                    assert_eq!(f["server_address"], "play.example.net", "{at}");
                    assert_eq!(f["port"], 19133, "{at}");
                    assert_eq!(f.get("reload_world").is_some(), p >= P1_21_30, "{at}");
                    if p >= P1_26_40 {
                        let g = &f["gathering"];
                        let mut want = set["gatherings_configuration"].clone();
                        for k in ["experience_id", "target_id"] {
                            want[k] = from_bp(want[k].as_str().unwrap()).into();
                        }
                        assert_eq!(g, &want, "{at}");
                    } else {
                        assert!(f.get("gathering").is_none(), "{at}");
                    }
                }
                "resource_packs_info" => {
                    assert_eq!(f["must_accept"], true, "{at}");
                    let t = &f["texture_packs"][0];
                    let uuid = set["texture_packs"][0]["uuid"].as_str().unwrap();
                    if p >= P1_21_50 {
                        assert_eq!(t["uuid"], from_bp(uuid), "{at}");
                    } else {
                        assert_eq!(t["uuid"], uuid, "{at}");
                    }
                    assert_eq!(t["version"], "1.2.3", "{at}");
                    assert_eq!(t["size"], 40960, "{at}");
                    assert_eq!(t["sub_pack_name"], "hd", "{at}");
                    assert_eq!(t["rtx_enabled"], true, "{at}");
                    assert_eq!(t.get("cdn_url").is_some(), p >= P1_21_42, "{at}");
                    let b = f.get("behaviour_packs");
                    assert_eq!(b.is_some(), p < P1_21_30, "{at}");
                    if let Some(b) = b {
                        assert_eq!(b[0]["has_scripts"], true, "{at}");
                    }
                    let links = f.get("resource_pack_links");
                    assert_eq!(links.is_some(), (P1_20_30..P1_21_42).contains(&p), "{at}");
                }
                "resource_pack_stack" => {
                    assert_eq!(f["resource_packs"][0]["version"], "1.2.3", "{at}");
                    assert_eq!(f["game_version"], "1.21.0", "{at}");
                    assert_eq!(f["experiments"][0]["name"], "data_driven_items", "{at}");
                    assert_eq!(f.get("behavior_packs").is_some(), p < P1_21_130, "{at}");
                }
                "resource_pack_client_response" => {
                    assert_eq!(f["response_status_name"], "send_packs", "{at}");
                    assert_eq!(f["pack_ids"], set["resourcepackids"], "{at}");
                }
                "start_game" => {
                    assert_eq!(f["entity_id"], -7, "{at}");
                    assert_eq!(f["runtime_entity_id"], 7, "{at}");
                    assert_eq!(f["player_gamemode_name"], "adventure", "{at}");
                    let pos = serde_json::json!({"x": 1.5, "y": 70.0, "z": -3.25});
                    assert_eq!(f["player_position"], pos, "{at}");
                    assert_eq!(
                        f["rotation"],
                        serde_json::json!({"pitch": 10.0, "yaw": 90.0})
                    );
                    assert_eq!(f["seed"], 987654321, "{at}");
                }
                other => panic!("a vector of {other}"),
            }
            n += 1;
        }
        assert_eq!(n, 16 * 8);
    }

    /// StartGame with its level settings set, as bedrock-protocol
    /// serialises it in each of minecraft-data's 55 versions from 1.16.201
    /// (scripts/bedrock-vectors.js, `START_GAME`): every field back.
    #[test]
    fn start_game_level_settings_in_every_version() {
        let text = include_str!("testdata/start_game.jsonl");
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let p = v["protocol"].as_u64().unwrap() as u32;
            let f = fields(v["hex"].as_str().unwrap(), p);
            let at = format!("{}: {f}", v["version"]);
            assert!(f.get("error").is_none(), "{at}");
            assert_eq!(f["entity_id"], -7, "{at}");
            assert_eq!(f["player_gamemode_name"], "adventure", "{at}");
            assert_eq!(f["seed"], 987654321, "{at}");
            assert_eq!(f["biome_type"], 3, "{at}");
            assert_eq!(f["biome_name"], "plains", "{at}");
            assert_eq!(f["dimension_name"], "overworld", "{at}");
            assert_eq!(f["generator"], 1, "{at}");
            assert_eq!(f["world_gamemode_name"], "creative", "{at}");
            assert_eq!(f.get("hardcore").is_some(), p >= P1_20_80, "{at}");
            assert_eq!(f["difficulty"], 2, "{at}");
            assert_eq!(
                f["spawn_position"],
                json!({"x": -5, "y": 64, "z": 12}),
                "{at}"
            );
            assert_eq!(f["achievements_disabled"], true, "{at}");
            assert_eq!(f.get("created_in_editor").is_some(), p >= P1_19_80, "{at}");
            assert_eq!(f["day_cycle_stop_time"], 6000, "{at}");
            assert_eq!(f["rain_level"], 0.5, "{at}");
            assert_eq!(f["is_multiplayer"], true, "{at}");
            assert_eq!(f["enable_commands"], true, "{at}");
            let rules = f["gamerules"].as_array().unwrap();
            let values: Vec<_> = rules.iter().map(|g| (&g["name"], &g["value"])).collect();
            assert_eq!(
                format!("{values:?}"),
                r#"[(String("dodaylightcycle"), Bool(true)), (String("randomtickspeed"), Number(3)), (String("fakefloat"), Number(1.5))]"#,
                "{at}"
            );
            assert_eq!(rules[0].get("editable").is_some(), p >= P1_17_0, "{at}");
            assert_eq!(f["experiments"][0]["name"], "data_driven_items", "{at}");
            assert_eq!(f["server_chunk_tick_range"], 4, "{at}");
            assert_eq!(f["game_version"], "1.21.0", "{at}");
            assert_eq!(f["limited_world_width"], 16, "{at}");
            assert_eq!(f["level_id"], "bGV2ZWw=", "{at}");
            assert_eq!(f["world_name"], "Dedicated Server", "{at}");
            assert_eq!(f["is_trial"], false, "{at}");
            let authority = f.get("movement_authority_name");
            assert_eq!(authority.is_some(), p < P1_21_90, "{at}");
            assert!(authority.is_none_or(|a| a == "server"), "{at}");
            if p >= P1_16_210 {
                assert_eq!(f["rewind_history_size"], 40, "{at}");
                assert_eq!(f["server_authoritative_block_breaking"], true, "{at}");
            }
            assert_eq!(f["current_tick"], 123456, "{at}");
            assert_eq!(f["enchantment_seed"], -99, "{at}");
        }
        assert_eq!(text.lines().count(), 55);
    }

    /// An experimental gameplay override that is set: minecraft-data has
    /// one byte, gophertunnel two; StartGame stops before it, no error.
    #[test]
    fn start_game_stops_at_a_set_override() {
        let v: Value = serde_json::from_str(
            include_str!("testdata/start_game.jsonl")
                .lines()
                .last()
                .unwrap(),
        )
        .unwrap();
        let mut b = crate::wire::cursor::parse_hex(v["hex"].as_str().unwrap()).unwrap();
        // The override is the byte before chat_restriction_level (0), the
        // interactions (0), the editor policy (0), the drops (0) and the
        // level id "bGV2ZWw=".
        let at = b.windows(9).position(|w| w == b"\x08bGV2ZWw=").unwrap() - 5;
        assert_eq!(&b[at..at + 5], &[0, 0, 0, 0, 0]);
        b[at] = 1;
        let f = fields(&crate::wire::cursor::hex(&b), 2225);
        assert!(f.get("error").is_none(), "{f}");
        assert_eq!(f["is_new_nether"], false, "{f}");
        assert!(f.get("level_id").is_none(), "{f}");
    }

    #[test]
    fn transfers_and_packs_by_version() {
        // Transfer to play.example.net:19133, reload_world from 1.21.30.
        let mut b = vec![0x55, 16];
        b.extend_from_slice(b"play.example.net");
        b.extend_from_slice(&19133u16.to_le_bytes());
        let hex = crate::wire::cursor::hex(&b);
        let old = fields(&hex, 527);
        assert_eq!(old["server_address"], "play.example.net");
        assert_eq!(old["port"], 19133);
        assert!(old.get("reload_world").is_none());
        let new = fields(&(hex.clone() + "01"), 2169);
        assert_eq!(new["reload_world"], true);
        assert!(fields(&hex, 2169)["error"].is_string(), "cut short");
        // A pack in 1.19.1's ResourcePacksInfo: a texture pack.
        let mut b = vec![0x06, 1, 0, 0]; // must_accept, has_scripts, force_server_packs
        b.extend_from_slice(&0u16.to_le_bytes()); // no behaviour packs
        b.extend_from_slice(&1u16.to_le_bytes());
        for s in ["0c4bb4d5-2a6f-4fe7-9b2c-d1b6f1b7c5a1", "1.0.0"] {
            b.push(s.len() as u8);
            b.extend_from_slice(s.as_bytes());
        }
        b.extend_from_slice(&4096u64.to_le_bytes());
        b.extend_from_slice(&[0, 0, 0, 0, 1]); // key, sub pack, identity, scripts, rtx
        let i = fields(&crate::wire::cursor::hex(&b), 527);
        assert_eq!(i["must_accept"], true, "{i}");
        let pack = &i["texture_packs"][0];
        assert_eq!(pack["uuid"], "0c4bb4d5-2a6f-4fe7-9b2c-d1b6f1b7c5a1");
        assert_eq!(pack["size"], 4096);
        assert_eq!(pack["rtx_enabled"], true);
        // A forged count: an error, not an allocation.
        let mut b = vec![0x06, 1, 0, 0, 0, 0, 0xff, 0xff];
        b.extend_from_slice(&[0; 8]);
        assert!(fields(&crate::wire::cursor::hex(&b), 527)["error"].is_string());
    }

    /// Every vector cut short anywhere before the last byte the decoder
    /// reads: an `error`, never a panic, and the fields before it kept.
    #[test]
    fn every_vector_cut_short_is_an_error() {
        for line in include_str!("testdata/packets.jsonl").lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let p = v["protocol"].as_u64().unwrap() as u32;
            let b = crate::wire::cursor::parse_hex(v["hex"].as_str().unwrap()).unwrap();
            let h = super::super::batch::Header::parse(&b).unwrap();
            let body = &b[h.len..];
            let (mut r, mut f) = (Body::new(body), Map::new());
            assert_eq!(decode(h.id, &mut r, &mut f, Some(p)), Some(Some(())));
            let used = r.pos;
            // All of it read, but for StartGame's level settings.
            if h.id != START_GAME {
                assert_eq!(used, body.len(), "{} {}: {f:?}", v["version"], v["name"]);
            }
            for cut in 0..used {
                let g = body_fields(h.id, &body[..cut], Some(p)).unwrap();
                let at = format!("{} {} cut at {cut}: {g}", v["version"], v["name"]);
                assert!(g["error"].is_string(), "{at}");
                assert!(g.as_object().unwrap().len() <= f.len() + 1, "{at}");
            }
        }
    }

    /// The vectors with bytes changed at random: past the first fields
    /// that random bytes never get through; never a panic.
    #[test]
    fn changed_vectors_never_panic() {
        let mut x: u32 = 0x9e37_79b9;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let all = include_str!("testdata/packets.jsonl").lines();
        for line in all.chain(include_str!("testdata/start_game.jsonl").lines()) {
            let v: Value = serde_json::from_str(line).unwrap();
            let p = v["protocol"].as_u64().unwrap() as u32;
            let b = crate::wire::cursor::parse_hex(v["hex"].as_str().unwrap()).unwrap();
            let h = super::super::batch::Header::parse(&b).unwrap();
            for _ in 0..64 {
                let mut body = b[h.len..].to_vec();
                for _ in 0..1 + next() % 3 {
                    let i = next() as usize % body.len();
                    body[i] = next() as u8;
                }
                assert!(body_fields(h.id, &body, Some(p)).is_some());
            }
        }
    }

    #[test]
    fn any_bytes_never_panic() {
        let mut x: u32 = 0x2545_f491;
        for id in [6u16, 7, 8, 9, 11, 85] {
            for len in 0..300 {
                let body: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        x as u8
                    })
                    .collect();
                for p in [
                    422, 428, 440, 465, 503, 527, 534, 544, 567, 582, 618, 671, 685, 748, 818, 844,
                    898, 944, 1001, 2169, 2225,
                ] {
                    assert!(body_fields(id, &body, Some(p)).is_some());
                }
                // Through the game layer's entry, the protocol unknown.
                let mut l = super::super::login::Learned::default();
                assert!(super::super::login::decode(id, &body, None, &mut l).is_some());
            }
        }
    }
}
