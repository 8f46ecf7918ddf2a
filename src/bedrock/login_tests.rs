//! Our Bedrock client against our server, in memory: each generation logs
//! in, encrypts, spawns and exchanges packets; the key log each side
//! writes opens the conversation for the passive game layer.

use serde_json::json;

use super::client::GameClient;
use super::server::GameServer;
use super::speak::SessionEvent;
use super::{Detect, Game, GameEvent, Keys};
use crate::dissect::Dir;
use crate::mirror::Message;
use crate::wire::Reliability;

/// Every message of a conversation, with its direction.
type Wire = Vec<(Dir, Vec<u8>)>;

/// Messages both ways until both spawned (or 50 rounds): every message,
/// with its direction, and each side's events.
fn converse(
    c: &mut GameClient,
    s: &mut GameServer,
) -> (Wire, Vec<SessionEvent>, Vec<SessionEvent>) {
    let mut wire = Vec::new();
    let (mut ce, mut se) = (Vec::new(), Vec::new());
    c.start().unwrap();
    for _ in 0..50 {
        while let Some(m) = c.poll_transmit() {
            s.handle(&m);
            wire.push((Dir::C2s, m));
        }
        while let Some(m) = s.poll_transmit() {
            c.handle(&m);
            wire.push((Dir::S2c, m));
        }
        ce.extend(std::iter::from_fn(|| c.poll_event()));
        se.extend(std::iter::from_fn(|| s.poll_event()));
        if c.spawned && s.spawned {
            break;
        }
    }
    (wire, ce, se)
}

#[test]
fn every_generation_logs_in_spawns_and_decrypts_with_its_key_log() {
    for version in ["1.26.45", "1.21.50", "1.19.1", "1.16.201"] {
        let mut c = GameClient::new(version, "Steve", "127.0.0.1:19132").unwrap();
        let mut s = GameServer::new(version).unwrap();
        let (mut wire, ce, se) = converse(&mut c, &mut s);
        let errors: Vec<_> = ce
            .iter()
            .chain(&se)
            .filter(|e| matches!(e, SessionEvent::Error(_) | SessionEvent::Refused(_)))
            .collect();
        assert!(errors.is_empty(), "{version}: {errors:?}");
        assert!(c.spawned && s.spawned, "{version}: {ce:?}\n{se:?}");
        assert_eq!(s.player.as_deref(), Some("Steve"));
        // After the spawn, a chat both ways.
        c.send(
            "text",
            json!({"type": "chat", "source_name": "Steve", "message": "hi"}),
        )
        .unwrap();
        let m = c.poll_transmit().unwrap();
        s.handle(&m);
        wire.push((Dir::C2s, m));
        let got: Vec<_> = std::iter::from_fn(|| s.poll_event()).collect();
        assert!(
            got.iter().any(|e| matches!(e, SessionEvent::Packet { name, fields } if name == "text" && fields["message"] == "hi")),
            "{version}: {got:?}"
        );
        // Both sides wrote the same key-log line.
        let log = |ev: &[SessionEvent]| {
            ev.iter().find_map(|e| match e {
                SessionEvent::KeyLog(l) => Some(l.clone()),
                _ => None,
            })
        };
        let line = log(&ce).expect("the client's key log");
        assert_eq!(log(&se).as_deref(), Some(line.as_str()), "{version}");
        // The passive game layer, with that line, reads every packet.
        let mut keys = Keys::default();
        assert!(keys.add_key_log(&line).is_empty());
        let mut g = Game::new(Detect::Always, keys);
        let mut names = Vec::new();
        for (i, (dir, data)) in wire.iter().enumerate() {
            let m = Message {
                flow: 1,
                dir: *dir,
                frame: i as u64,
                ts: std::time::Duration::from_millis(i as u64),
                data: data.clone(),
                reliability: Reliability::RELIABLE_ORDERED,
                channel: Some(0),
                anomalies: Vec::new(),
            };
            for e in g.message(&m).unwrap_or_default() {
                match e {
                    GameEvent::Packet(p) => {
                        assert!(
                            p.anomaly.is_none(),
                            "{version} {:?}: {:?}",
                            p.name,
                            p.anomaly
                        );
                        names.push(p.name.unwrap_or("?"));
                    }
                    GameEvent::Opaque(o) => panic!("{version}: opaque batch: {}", o.detail),
                }
            }
        }
        for want in [
            "login",
            "server_to_client_handshake",
            "client_to_server_handshake",
            "start_game",
            "set_local_player_as_initialized",
            "text",
        ] {
            assert!(names.contains(&want), "{version}: {want} in {names:?}");
        }
    }
}

#[test]
fn a_client_of_another_protocol_is_refused_in_words() {
    // The client speaks 1.26.45, the server 1.21.50.
    let mut c = GameClient::new("1.26.45", "Steve", "h:1").unwrap();
    let mut s = GameServer::new("1.21.50").unwrap();
    let (_, ce, se) = converse(&mut c, &mut s);
    let refused = |ev: &[SessionEvent]| {
        ev.iter().find_map(|e| match e {
            SessionEvent::Refused(w) => Some(w.clone()),
            _ => None,
        })
    };
    let at_client = refused(&ce).expect("the client hears the refusal");
    assert!(at_client.contains("too new"), "{at_client}");
    let at_server = refused(&se).unwrap();
    assert!(
        at_server.contains("protocol 2169") && at_server.contains("1.21.50"),
        "{at_server}"
    );
}
