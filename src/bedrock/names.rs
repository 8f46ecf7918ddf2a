//! Bedrock game packet names (`login`, `play_status`, `start_game`, …) by
//! protocol number, as the npm package minecraft-data names them.
//!
//! The data is `packet_names.txt` beside this file, made by
//! `scripts/bedrock-names.py` from minecraft-data 3.119.0 (MIT: see
//! `LICENSE-minecraft-data`) and embedded in the binary: one table per
//! protocol number from 1.16.201 (422) on, parsed once on first use.
//!
//! A protocol number that the data does not know uses the nearest older
//! known one (packet ids are only ever added, renamed or retired, so an older
//! table is the best guess for a version in between); one older than all uses
//! the oldest. `nearest_protocol` says which table that is.

use std::sync::OnceLock;

/// The generated table, embedded.
const DATA: &str = include_str!("packet_names.txt");

/// One known protocol number.
#[derive(Debug)]
struct Protocol {
    number: u32,
    /// Game versions with this number, oldest first.
    versions: Vec<&'static str>,
    /// Index into [`Names::tables`].
    table: usize,
}

/// The parsed data.
#[derive(Debug)]
struct Names {
    /// Ascending by number; never empty.
    protocols: Vec<Protocol>,
    /// Each table sorted by packet id.
    tables: Vec<Vec<(u16, &'static str)>>,
}

fn names() -> &'static Names {
    static NAMES: OnceLock<Names> = OnceLock::new();
    NAMES.get_or_init(|| match parse(DATA) {
        Ok(n) => n,
        Err(e) => panic!("src/bedrock/packet_names.txt: {e}"),
    })
}

/// Parses the format `scripts/bedrock-names.py` writes (its header says it).
fn parse(text: &'static str) -> Result<Names, String> {
    let mut protocols: Vec<Protocol> = Vec::new();
    let mut tables: Vec<Vec<(u16, &'static str)>> = Vec::new();
    // The table being built, by id (ids are under 1024).
    let mut current: Vec<Option<&'static str>> = vec![None; 1024];
    let flush = |current: &[Option<&'static str>], tables: &mut Vec<_>| {
        let t: Vec<(u16, &'static str)> = (0u16..)
            .zip(current)
            .filter_map(|(id, n)| n.map(|n| (id, n)))
            .collect();
        tables.push(t);
    };
    let mut open = false;
    for (i, line) in text.lines().enumerate() {
        let err = |what: &str| format!("line {}: {what}: {line:?}", i + 1);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_ascii_whitespace();
        let head = words.next().unwrap_or_default();
        match head {
            "protocol" => {
                let number: u32 = words
                    .next()
                    .and_then(|w| w.parse().ok())
                    .ok_or_else(|| err("protocol number"))?;
                if protocols.last().is_some_and(|p| p.number >= number) {
                    return Err(err("protocols must ascend"));
                }
                let versions: Vec<&'static str> = words.collect();
                if versions.is_empty() {
                    return Err(err("a protocol without a game version"));
                }
                protocols.push(Protocol {
                    number,
                    versions,
                    table: usize::MAX,
                });
            }
            "table" => {
                if open {
                    flush(&current, &mut tables);
                }
                open = true;
                let mut any = false;
                for w in words {
                    let number: u32 = w.parse().map_err(|_| err("protocol number"))?;
                    let p = protocols
                        .iter_mut()
                        .find(|p| p.number == number)
                        .ok_or_else(|| err("a table for an undeclared protocol"))?;
                    if p.table != usize::MAX {
                        return Err(err("a protocol with two tables"));
                    }
                    p.table = tables.len();
                    any = true;
                }
                if !any {
                    return Err(err("a table without a protocol"));
                }
            }
            _ => {
                if !open {
                    return Err(err("a packet line before any table"));
                }
                let id: u16 = head
                    .parse()
                    .ok()
                    .filter(|&id| id < 1024)
                    .ok_or_else(|| err("packet id (0 to 1023)"))?;
                let name = words.next().ok_or_else(|| err("packet name"))?;
                if words.next().is_some() {
                    return Err(err("more than an id and a name"));
                }
                current[usize::from(id)] = (name != "-").then_some(name);
            }
        }
    }
    if !open {
        return Err("no table".into());
    }
    flush(&current, &mut tables);
    if let Some(p) = protocols.iter().find(|p| p.table == usize::MAX) {
        return Err(format!("protocol {} has no table", p.number));
    }
    Ok(Names { protocols, tables })
}

impl Names {
    /// The index in `protocols` of the known protocol used for `protocol`,
    /// and whether it is `protocol` itself.
    fn nearest(&self, protocol: u32) -> (usize, bool) {
        match self.protocols.binary_search_by_key(&protocol, |p| p.number) {
            Ok(i) => (i, true),
            Err(0) => (0, false),
            Err(i) => (i - 1, false),
        }
    }

    /// The table for `protocol` (`None`: the newest).
    fn table(&self, protocol: Option<u32>) -> &[(u16, &'static str)] {
        let i = match protocol {
            Some(p) => self.nearest(p).0,
            None => self.protocols.len() - 1,
        };
        &self.tables[self.protocols[i].table]
    }
}

/// The name of game packet `id` under `protocol` (`None`: the newest known
/// protocol), or `None` where that table has no such id. An unknown protocol
/// uses the nearest older known one (see `nearest_protocol`). `id` is the
/// packet id of the header, already masked to its 10 bits by the caller.
///
/// ```
/// use raknet_dissect::bedrock::names::packet_name;
/// assert_eq!(packet_name(Some(649), 1), Some("login"));
/// assert_eq!(packet_name(None, 0x8f), Some("network_settings"));
/// ```
pub fn packet_name(protocol: Option<u32>, id: u16) -> Option<&'static str> {
    let t = names().table(protocol);
    t.binary_search_by_key(&id, |&(i, _)| i)
        .ok()
        .map(|i| t[i].1)
}

/// The id of the game packet named `name` under `protocol` (`None`: the
/// newest known protocol), for filters; the same nearest-older rule as
/// [`packet_name`].
#[cfg(test)]
pub(crate) fn packet_id(protocol: Option<u32>, name: &str) -> Option<u16> {
    names()
        .table(protocol)
        .iter()
        .find(|&&(_, n)| n == name)
        .map(|&(id, _)| id)
}

/// The game versions that have protocol number `protocol`, oldest first, as
/// minecraft-data lists them (`594` is `["1.20.10", "1.20.15"]`); empty for
/// a number it does not know.
pub(crate) fn versions(protocol: u32) -> &'static [&'static str] {
    let n = names();
    match n.nearest(protocol) {
        (i, true) => &n.protocols[i].versions,
        (_, false) => &[],
    }
}

/// The known protocol number whose table [`packet_name`] uses for
/// `protocol`, and whether it is `protocol` itself: the nearest older known
/// one, or the oldest for a number older than all.
#[cfg(test)]
pub(crate) fn nearest_protocol(protocol: u32) -> (u32, bool) {
    let n = names();
    let (i, exact) = n.nearest(protocol);
    (n.protocols[i].number, exact)
}

/// Whether some protocol's table has a packet called `name`.
pub(crate) fn is_packet_name(name: &str) -> bool {
    all_names().any(|n| n == name)
}

/// Every name of every table (a name in several tables comes once for
/// each).
pub(crate) fn all_names() -> impl Iterator<Item = &'static str> {
    static ALL: OnceLock<Vec<&'static str>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<&'static str> = names().tables.iter().flatten().map(|&(_, n)| n).collect();
        all.sort_unstable();
        all.dedup();
        all
    })
    .iter()
    .copied()
}

/// Every known protocol number, ascending.
pub(crate) fn protocols() -> impl Iterator<Item = u32> {
    names().protocols.iter().map(|p| p.number)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The minecraft-data folders with a protocol.json from 1.16.201 on
    /// (docs/bedrock-protocol.md §5: 53 of them, 1.16.201 … 1.26.60); each is also the
    /// game version that names it.
    const FOLDERS: [&str; 53] = [
        "1.16.201", "1.16.210", "1.16.220", "1.17.0", "1.17.10", "1.17.30", "1.17.40", "1.18.0",
        "1.18.11", "1.18.30", "1.19.1", "1.19.10", "1.19.20", "1.19.21", "1.19.30", "1.19.40",
        "1.19.50", "1.19.60", "1.19.62", "1.19.70", "1.19.80", "1.20.0", "1.20.10", "1.20.30",
        "1.20.40", "1.20.50", "1.20.61", "1.20.71", "1.20.80", "1.21.0", "1.21.2", "1.21.20",
        "1.21.30", "1.21.42", "1.21.50", "1.21.60", "1.21.70", "1.21.80", "1.21.90", "1.21.93",
        "1.21.100", "1.21.111", "1.21.120", "1.21.124", "1.21.130", "1.26.0", "1.26.10", "1.26.20",
        "1.26.30", "1.26.40", "1.26.45", "1.26.51", "1.26.60",
    ];

    #[test]
    fn every_folder_is_a_known_version() {
        for f in FOLDERS {
            let p = protocols().find(|&p| versions(p).contains(&f));
            assert!(p.is_some(), "version folder {f} has no protocol");
        }
        // Two numbers are shared (567: 1.19.60 and 1.19.62; 594: 1.20.10
        // and 1.20.15), and 1.19.63 (568) reads 1.19.62's folder.
        assert_eq!(protocols().count(), 53);
        assert_eq!(protocols().next(), Some(422));
        assert_eq!(protocols().last(), Some(2225));
        assert_eq!(names().tables.len(), 40, "distinct neighbouring tables");
    }

    #[test]
    fn the_header_names_its_source() {
        assert!(DATA.contains("minecraft-data 3.119.0"));
        assert!(DATA.contains("scripts/bedrock-names.py"));
    }

    #[test]
    fn early_packets_keep_their_ids_in_every_version() {
        for p in protocols() {
            assert_eq!(packet_name(Some(p), 1), Some("login"), "{p}");
            assert_eq!(packet_name(Some(p), 2), Some("play_status"), "{p}");
            assert_eq!(packet_name(Some(p), 3), Some("server_to_client_handshake"));
            assert_eq!(packet_name(Some(p), 4), Some("client_to_server_handshake"));
            assert_eq!(packet_name(Some(p), 5), Some("disconnect"), "{p}");
            assert_eq!(packet_name(Some(p), 11), Some("start_game"), "{p}");
            assert_eq!(packet_name(Some(p), 0x8f), Some("network_settings"), "{p}");
            assert_eq!(packet_name(Some(p), 0), None, "{p}");
        }
    }

    #[test]
    fn request_network_settings_exists_from_1_19_30() {
        // RequestNetworkSettings (0xC1) came with 1.19.30 (protocol 554).
        assert_eq!(packet_name(Some(545), 0xc1), None);
        assert_eq!(
            packet_name(Some(554), 0xc1),
            Some("request_network_settings")
        );
        assert_eq!(packet_name(None, 193), Some("request_network_settings"));
        assert_eq!(packet_id(Some(545), "request_network_settings"), None);
        assert_eq!(packet_id(Some(554), "request_network_settings"), Some(0xc1));
    }

    #[test]
    fn newer_ids_are_unknown_to_older_protocols() {
        assert_eq!(packet_name(Some(2193), 360), None);
        assert_eq!(
            packet_name(Some(2225), 360),
            Some("serverbound_register_audio_content")
        );
        assert_eq!(
            packet_name(None, 360),
            Some("serverbound_register_audio_content")
        );
        // Ids 200 to 299 were skipped: 1.19.70 went from 199 to 300.
        assert_eq!(packet_name(Some(575), 300), Some("camera_instruction"));
        assert!((200..300).all(|id| packet_name(None, id).is_none()));
        // 16 was filled late (1.20.50).
        assert_eq!(packet_name(Some(622), 16), None);
        assert_eq!(packet_name(Some(630), 16), Some("server_post_move"));
    }

    #[test]
    fn retired_and_renamed_ids() {
        assert_eq!(packet_name(Some(630), 127), Some("add_ecs_entity"));
        assert_eq!(packet_name(Some(649), 127), None);
        assert_eq!(packet_name(Some(649), 71), Some("item_frame_drop_item"));
        assert_eq!(packet_name(Some(662), 71), None);
        assert_eq!(packet_name(Some(766), 162), Some("item_component"));
        assert_eq!(packet_name(Some(776), 162), Some("item_registry"));
        assert_eq!(packet_name(Some(944), 164), Some("debug_renderer"));
        assert_eq!(packet_name(Some(975), 164), Some("primitive_shapes"));
        assert_eq!(
            packet_name(Some(422), 164),
            None,
            "debug_renderer came in 1.16.210"
        );
    }

    #[test]
    fn nearest_older_protocol() {
        assert_eq!(nearest_protocol(649), (649, true));
        assert_eq!(nearest_protocol(650), (649, false));
        assert_eq!(nearest_protocol(661), (649, false));
        assert_eq!(nearest_protocol(1500), (1001, false));
        assert_eq!(
            nearest_protocol(9999),
            (2225, false),
            "newer than all: the newest"
        );
        assert_eq!(
            nearest_protocol(100),
            (422, false),
            "older than all: the oldest"
        );
        assert_eq!(nearest_protocol(0), (422, false));
        // The name follows the protocol chosen: 650 reads 649's table
        // (set_hud, 308, came in 1.20.61), 629 reads 622's (no 16).
        assert_eq!(packet_name(Some(650), 308), Some("set_hud"));
        assert_eq!(packet_name(Some(629), 16), None);
        assert_eq!(packet_name(Some(100), 164), None);
        assert_eq!(packet_name(Some(u32::MAX), 360), packet_name(None, 360));
    }

    #[test]
    fn versions_of_a_protocol() {
        assert_eq!(versions(567), ["1.19.60", "1.19.62"]);
        assert_eq!(versions(568), ["1.19.63"]);
        assert_eq!(versions(594), ["1.20.10", "1.20.15"]);
        assert_eq!(versions(649), ["1.20.61"]);
        assert_eq!(versions(2169), ["1.26.45"]);
        assert!(versions(650).is_empty());
        assert!(versions(70).is_empty(), "0.14.3 is before the data");
    }

    #[test]
    fn ids_and_names_round_trip_in_every_table() {
        for p in protocols() {
            for id in 0..1024 {
                if let Some(n) = packet_name(Some(p), id) {
                    assert_eq!(packet_id(Some(p), n), Some(id), "{p}: {n}");
                }
            }
        }
        assert_eq!(packet_id(None, "start_game"), Some(11));
        assert_eq!(packet_id(None, "no_such_packet"), None);
        assert_eq!(packet_id(Some(944), "debug_renderer"), Some(164));
        assert_eq!(packet_id(Some(975), "debug_renderer"), None);
    }

    #[test]
    fn bad_data_is_refused() {
        let ok = "protocol 1 1.0\nprotocol 2 1.1\ntable 1\n1 a\ntable 2\n1 -\n2 b\n";
        let n = parse(ok).unwrap();
        assert_eq!(n.tables, [vec![(1, "a")], vec![(2, "b")]]);
        for bad in [
            "",
            "protocol 1 1.0\n",
            "protocol 1\ntable 1\n",
            "protocol 2 a\nprotocol 1 b\ntable 1 2\n",
            "protocol 1 a\ntable 1\ntable 1\n",
            "protocol 1 a\ntable 3\n",
            "protocol 1 a\ntable\n",
            "protocol 1 a\n1 login\ntable 1\n",
            "protocol 1 a\ntable 1\n1024 x\n",
            "protocol 1 a\ntable 1\n1 x y\n",
            "protocol 1 a\ntable 1\n1\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
