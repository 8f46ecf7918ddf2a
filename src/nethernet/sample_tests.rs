//! The codecs against a real NetherNet session: `samples/nethernet-join.pcap`,
//! two aiortc peers (real ICE, DTLS through OpenSSL, SCTP) joining over
//! loopback as Mojang's guide says, with the DTLS key log both wrote and
//! what each application sent and received (`.truth.jsonl`, recorded
//! inside the peers by `scripts/nethernet_peers.py`). Every STUN check
//! verifies with the receiver's `ice-pwd`, every DTLS record after the
//! handshake opens with the logged master secret, every SCTP packet has
//! its CRC-32C, the channels open by DCEP with their labels, and the
//! messages reassembled from the DATA chunks are, side by side and in
//! order, the ones each application sent.

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::path::Path;

use super::{classify, dcep, delivery, dtls, framing, sctp, sdp, stun, Demux};

fn sample(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(name)
}

fn truth() -> Vec<serde_json::Value> {
    truth_of("nethernet-join")
}

/// The records of `samples/NAME.truth.jsonl`.
fn truth_of(name: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(sample(&format!("{name}.truth.jsonl"))).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What the truth says one side did: `(type, side, event)` records.
fn of<'t>(
    truth: &'t [serde_json::Value],
    kind: &'t str,
    side: &'t str,
    event: Option<&'t str>,
) -> impl Iterator<Item = &'t serde_json::Value> + 't {
    truth.iter().filter(move |r| {
        r["type"] == kind && r["side"] == side && event.is_none_or(|e| r["event"] == e)
    })
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn an_aiortc_join_reads_back_as_its_peers_sent_it() {
    let truth = truth();
    // Each side's SDP (the offer is the client's, the answer the
    // server's) and its UDP address (the DTLS record of each side).
    let sdp_of = |side: &str, kind: &str| {
        let r = of(&truth, "sdp", side, None)
            .find(|r| r["kind"] == kind)
            .unwrap();
        sdp::Sdp::parse(r["sdp"].as_str().unwrap()).unwrap()
    };
    let (offer, answer) = (sdp_of("client", "offer"), sdp_of("server", "answer"));
    let addr_of = |side: &str| -> SocketAddr {
        let r = of(&truth, "dtls", side, None).next().unwrap();
        let a = &r["local_address"];
        format!("{}:{}", a[0].as_str().unwrap(), a[1])
            .parse()
            .unwrap()
    };
    let (client, server) = (addr_of("client"), addr_of("server"));
    let pwd = |a: SocketAddr| {
        let s = if a == client { &offer } else { &answer };
        s.ice_pwd.clone().unwrap()
    };
    let keylog =
        dtls::KeyLog::parse(&std::fs::read_to_string(sample("nethernet-join.keylog")).unwrap());

    let reader = crate::capture::CaptureReader::open(&sample("nethernet-join.pcap")).unwrap();
    let (mut stun_checked, mut records_opened) = (0, 0);
    let mut alerts = Vec::new();
    let mut hello: Option<(SocketAddr, [u8; 32])> = None;
    let mut keys: Option<dtls::Keys> = None;
    let mut certs: BTreeMap<SocketAddr, String> = BTreeMap::new();
    let mut flights: BTreeMap<SocketAddr, dtls::Reassembly> = BTreeMap::new();
    // Sender -> stream -> reassembly, and the messages delivered.
    let mut seen_tsn: HashSet<(SocketAddr, u32)> = HashSet::new();
    let mut partial: BTreeMap<(SocketAddr, u16), Vec<u8>> = BTreeMap::new();
    let mut delivered: BTreeMap<(SocketAddr, u16), Vec<Vec<u8>>> = BTreeMap::new();
    let mut labels: BTreeMap<(SocketAddr, u16), String> = BTreeMap::new();
    // The receive half of each direction, by receiver: what its
    // application got.
    let mut receivers: BTreeMap<SocketAddr, delivery::Receiver> = BTreeMap::new();
    let mut got: BTreeMap<SocketAddr, Vec<(u16, Vec<u8>)>> = BTreeMap::new();
    for d in reader {
        let d = d.unwrap();
        if ![client, server].contains(&d.src) {
            continue; // the signaling's TCP is not read here
        }
        match classify(&d.payload) {
            Demux::Stun => {
                let m = stun::Message::parse(&d.payload).unwrap();
                assert_eq!(m.fingerprint_ok(), Some(true));
                // A request is keyed by its receiver's password, the
                // response by its sender's (the same one).
                let key = if m.class == stun::Class::Request {
                    pwd(d.dst)
                } else {
                    pwd(d.src)
                };
                assert_eq!(m.integrity(key.as_bytes()), Some(true), "frame {}", d.frame);
                stun_checked += 1;
            }
            Demux::Dtls => {
                for r in dtls::records(&d.payload).unwrap() {
                    if r.epoch == 0 && r.content == dtls::content::HANDSHAKE {
                        for f in dtls::handshakes(r.fragment, r.at + 13).unwrap() {
                            let flight = flights.entry(d.src).or_default();
                            let Some(h) = flight.push(&f).unwrap() else {
                                continue;
                            };
                            match h.kind {
                                1 => {
                                    let ch = dtls::hello(&h.body, true).unwrap();
                                    assert!(ch
                                        .extensions
                                        .contains(&dtls::EXT_EXTENDED_MASTER_SECRET));
                                    hello = Some((d.src, ch.random));
                                }
                                2 => {
                                    let sh = dtls::hello(&h.body, false).unwrap();
                                    let suite = dtls::Suite::from_id(sh.cipher_suites[0]).unwrap();
                                    let (_, cr) = hello.unwrap();
                                    let master = keylog.master(&cr).expect("the key log names it");
                                    keys = Some(dtls::Keys::derive(suite, master, &cr, &sh.random));
                                }
                                11 => {
                                    let list = dtls::certificates(&h.body).unwrap();
                                    certs.insert(d.src, dtls::fingerprint(list[0]));
                                }
                                _ => {}
                            }
                        }
                    }
                    if r.content == dtls::content::ALERT && r.epoch > 0 {
                        let from_client = hello.is_some_and(|(c, _)| c == d.src);
                        alerts.push(keys.as_ref().unwrap().decrypt(&r, from_client).unwrap());
                    }
                    if r.content != dtls::content::APPLICATION_DATA {
                        continue;
                    }
                    let from_client = hello.is_some_and(|(c, _)| c == d.src);
                    let plain = keys.as_ref().unwrap().decrypt(&r, from_client).unwrap();
                    records_opened += 1;
                    assert!(sctp::checksum_ok(&plain), "frame {}", d.frame);
                    let p = sctp::Packet::parse(&plain).unwrap();
                    assert_eq!((p.src_port, p.dst_port), (5000, 5000));
                    let mut events = Vec::new();
                    receivers
                        .entry(d.dst)
                        .or_default()
                        .chunks(&p.chunks, &mut events);
                    for e in events {
                        if let delivery::Event::Delivered(m) = e {
                            if m.ppid == sctp::ppid::BINARY {
                                got.entry(d.dst).or_default().push((m.stream, m.data));
                            }
                        }
                    }
                    for c in &p.chunks {
                        let sctp::Body::Data(data) = &c.body else {
                            continue;
                        };
                        if !seen_tsn.insert((d.src, data.tsn)) {
                            continue; // a retransmission
                        }
                        let key = (d.src, data.stream);
                        let buf = partial.entry(key).or_default();
                        if data.beginning {
                            buf.clear();
                        }
                        buf.extend_from_slice(data.payload);
                        if !data.ending {
                            continue;
                        }
                        let msg = std::mem::take(buf);
                        match data.ppid {
                            Some(sctp::ppid::DCEP) => {
                                if let dcep::Message::Open(o) = dcep::Message::parse(&msg).unwrap()
                                {
                                    labels.insert(key, o.label);
                                }
                            }
                            Some(sctp::ppid::BINARY) => delivered.entry(key).or_default().push(msg),
                            other => panic!("PPID {other:?}"),
                        }
                    }
                }
            }
            other => panic!("frame {}: {other:?}", d.frame),
        }
    }
    assert_eq!(stun_checked, 4);
    // As many as tshark counts with the same key log.
    assert_eq!(records_opened, 79);
    assert_eq!(alerts, [vec![1, 0]], "one close_notify, encrypted");
    // The DTLS certificates are the SDPs' sha-256 fingerprints.
    assert_eq!(certs.get(&client).map(String::as_str), offer.sha256());
    assert_eq!(certs.get(&server).map(String::as_str), answer.sha256());
    // The client opened both channels.
    let opened: Vec<&String> = labels.values().collect();
    assert_eq!(opened, ["ReliableDataChannel", "UnreliableDataChannel"]);
    // What each side sent, channel by channel, is what the capture holds.
    for (side, addr) in [("client", client), ("server", server)] {
        let mut sent: BTreeMap<u16, Vec<Vec<u8>>> = BTreeMap::new();
        for r in of(&truth, "message", side, Some("sent")) {
            let stream = r["stream_id"].as_u64().unwrap() as u16;
            sent.entry(stream)
                .or_default()
                .push(unhex(r["hex"].as_str().unwrap()));
        }
        assert!(!sent.is_empty());
        for (stream, msgs) in sent {
            assert_eq!(
                delivered.get(&(addr, stream)),
                Some(&msgs),
                "{side} stream {stream}"
            );
        }
    }
    // The receive halves delivered what each application received, in
    // the order it received it.
    for (side, addr) in [("client", client), ("server", server)] {
        let want: Vec<(u16, Vec<u8>)> = of(&truth, "message", side, Some("received"))
            .map(|r| {
                (
                    r["stream_id"].as_u64().unwrap() as u16,
                    unhex(r["hex"].as_str().unwrap()),
                )
            })
            .collect();
        assert!(want.len() > 5);
        assert_eq!(got.get(&addr), Some(&want), "{side}");
    }
    // The reliable channel's segments make the batches each side sent.
    for (side, addr) in [("client", client), ("server", server)] {
        let mut r = framing::Reassembler::new(framing::DEFAULT_LIMIT);
        let batches: Vec<Vec<u8>> = delivered[&(addr, 1)]
            .iter()
            .filter_map(|m| match r.push(m) {
                framing::Step::Whole(b) => Some(b),
                framing::Step::Partial => None,
                framing::Step::Broken(why) => panic!("{why}"),
            })
            .collect();
        let want: Vec<Vec<u8>> = of(&truth, "batch", side, Some("sent"))
            .filter(|b| b["label"] == "ReliableDataChannel")
            .map(|b| unhex(b["hex"].as_str().unwrap()))
            .collect();
        assert_eq!(batches, want, "{side}");
    }
}

/// The signaling of the same join: TCP segments put in order per
/// direction (`capture::tcp`), read as HTTP (`http`): the status GET and
/// its JSON, the POST with the offer and its answer, each byte for byte
/// what the peers recorded; the SDPs' assertions verify.
#[test]
fn the_signaling_reads_back_from_its_tcp_segments() {
    use super::{http, identity};
    use crate::capture::tcp;
    let truth = truth();
    let file = std::fs::File::open(sample("nethernet-join.pcap")).unwrap();
    let mut pcap = pcap_file::pcap::PcapReader::new(file).unwrap();
    let port = truth[0]["port"].as_u64().unwrap() as u16;
    // Each connection (by the client's port): client -> server
    // (requests) and back (responses), in the order they opened.
    type Conn = (tcp::Direction, Vec<u8>, tcp::Direction, Vec<u8>);
    let mut conns: Vec<(u16, Conn)> = Vec::new();
    let mut notes = Vec::new();
    while let Some(p) = pcap.next_packet() {
        let p = p.unwrap();
        let Ok(s) = etherparse::SlicedPacket::from_ethernet(p.data()) else {
            continue;
        };
        let Some(etherparse::TransportSlice::Tcp(t)) = s.transport else {
            continue;
        };
        let (client_port, up) = if t.destination_port() == port {
            (t.source_port(), true)
        } else if t.source_port() == port {
            (t.destination_port(), false)
        } else {
            continue;
        };
        let i = match conns.iter().position(|(c, _)| *c == client_port) {
            Some(i) => i,
            None => {
                conns.push((client_port, Default::default()));
                conns.len() - 1
            }
        };
        let c = &mut conns[i].1;
        let (d, out) = if up {
            (&mut c.0, &mut c.1)
        } else {
            (&mut c.2, &mut c.3)
        };
        d.segment(
            t.sequence_number(),
            t.syn(),
            t.fin(),
            t.payload(),
            out,
            &mut notes,
        );
    }
    assert!(notes.is_empty(), "{notes:?}");
    let (mut requests, mut responses) = (Vec::new(), Vec::new());
    for (_, (_, up, _, down)) in &conns {
        requests.extend(http::Stream::new().push(up).unwrap());
        responses.extend(http::Stream::new().push(down).unwrap());
    }
    let client_sent: Vec<&serde_json::Value> = of(&truth, "http", "client", Some("sent")).collect();
    let server_sent: Vec<&serde_json::Value> = of(&truth, "http", "server", Some("sent")).collect();
    // The client's GET is not in its record as sent; the server saw it.
    let got: Vec<&serde_json::Value> = of(&truth, "http", "server", Some("received")).collect();
    assert_eq!(requests.len(), got.len());
    for (m, want) in requests.iter().zip(&got) {
        let http::Start::Request { method, target } = &m.start else {
            panic!()
        };
        assert_eq!(
            (method.as_str(), target.as_str()),
            (
                want["method"].as_str().unwrap(),
                want["path"].as_str().unwrap()
            )
        );
        assert_eq!(
            String::from_utf8_lossy(&m.body),
            want["body"].as_str().unwrap()
        );
    }
    assert!(client_sent.iter().any(|r| r["method"] == "POST"));
    assert_eq!(responses.len(), server_sent.len());
    for (m, want) in responses.iter().zip(&server_sent) {
        let http::Start::Response { status, .. } = m.start else {
            panic!()
        };
        assert_eq!(u64::from(status), want["status"].as_u64().unwrap());
        assert_eq!(m.header("content-type"), want["content_type"].as_str());
        assert_eq!(
            String::from_utf8_lossy(&m.body),
            want["body"].as_str().unwrap()
        );
    }
    // The offer and the answer, from the capture: both assertions hold.
    let offer = sdp::Sdp::parse(std::str::from_utf8(&requests[1].body).unwrap()).unwrap();
    let answer = sdp::Sdp::parse(std::str::from_utf8(&responses[1].body).unwrap()).unwrap();
    for s in [&offer, &answer] {
        let a = identity::of(s).unwrap().unwrap();
        assert_eq!(a.fingerprints_verify, Some(true));
    }
    assert_eq!(
        identity::of(&offer).unwrap().unwrap().claims["xname"],
        "Steve"
    );
}

/// The same join through `Association`, the 5-tuple's model: the batches
/// each application received, the channels, the handshake's facts.
#[test]
fn the_association_gives_each_side_its_batches() {
    association_reads("nethernet-join", false);
}

/// A join through the seeded relay (`samples/nethernet-lossy`: about 10%
/// of the datagrams lost each way, some duplicated, some held back; the
/// capture holds both legs): each application still gets, and the
/// receive halves still deliver, the same batches, the lost pings of the
/// unreliable channel missing from both.
#[test]
fn a_lossy_join_gives_each_side_what_it_received() {
    association_reads("nethernet-lossy", true);
}

/// `samples/NAME.pcap` through an `Association`: what each application of
/// its truth received, batch by batch and game packet by game packet.
/// `lossy`: the capture went through the seeded relay (the unreliable
/// channel may have given messages up; the close_notify may be lost).
fn association_reads(name: &str, lossy: bool) {
    use super::association::{Association, Event, Problem};
    let truth = truth_of(name);
    let keylog =
        dtls::KeyLog::parse(&std::fs::read_to_string(sample(&format!("{name}.keylog"))).unwrap());
    // One association per UDP conversation (through the relay, each
    // peer's own: the same SCTP association shows on both legs), the
    // events of all in capture order.
    let mut conversations: BTreeMap<(SocketAddr, SocketAddr), Association> = BTreeMap::new();
    let mut events = Vec::new();
    let reader = crate::capture::CaptureReader::open(&sample(&format!("{name}.pcap"))).unwrap();
    for d in reader {
        let d = d.unwrap();
        let key = (d.src.min(d.dst), d.src.max(d.dst));
        conversations
            .entry(key)
            .or_insert_with(|| Association::new(delivery::Limits::default(), false))
            .datagram(
                d.src,
                d.dst,
                &d.payload,
                (&keylog, &Default::default()),
                &mut events,
            );
    }
    assert_eq!(conversations.len(), if lossy { 2 } else { 1 });
    let anomalies: Vec<&Event> = events
        .iter()
        .filter(|e| match e {
            Event::Anomaly { kind, .. } => !(lossy && *kind == Problem::Abandoned),
            _ => false,
        })
        .collect();
    assert!(anomalies.is_empty(), "{anomalies:?}");
    for a in conversations.values() {
        assert!(a.decrypts());
        assert_eq!(a.suite, Some(0xC02B));
        let labels: Vec<&str> = a.channels.values().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["ReliableDataChannel", "UnreliableDataChannel"]);
    }
    let retransmitted: u64 = conversations
        .values()
        .flat_map(|a| a.counts.values())
        .map(|c| c.retransmitted)
        .sum();
    assert_eq!(
        retransmitted > 0,
        lossy,
        "retransmissions seen: {retransmitted}"
    );
    let alerts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Alert { alert, .. } => Some(*alert),
            _ => None,
        })
        .collect();
    if !lossy {
        assert_eq!(alerts, [Some((1, 0))]);
    }
    // The DTLS server answered the offer (aiortc: the answerer is active,
    // the DTLS client).
    let addr_of = |side: &str| {
        let r = of(&truth, "dtls", side, None).next().unwrap();
        let l = &r["local_address"];
        format!("{}:{}", l[0].as_str().unwrap(), l[1])
            .parse::<SocketAddr>()
            .unwrap()
    };
    let (server_addr, client_addr) = (addr_of("server"), addr_of("client"));
    if !lossy {
        // Through the relay, the DTLS client is the relay's port.
        let a = conversations.values().next().unwrap();
        assert_eq!(a.dtls_client, Some(server_addr));
    }
    // The messages each side's stack delivered, across both channels, in
    // the order its application got them (through the relay, the pings
    // of the unreliable channel overtake a reliable message being resent).
    for (side, addr) in [("client", client_addr), ("server", server_addr)] {
        let want: Vec<(u16, Vec<u8>)> = of(&truth, "message", side, Some("received"))
            .map(|r| {
                (
                    r["stream_id"].as_u64().unwrap() as u16,
                    unhex(r["hex"].as_str().unwrap()),
                )
            })
            .collect();
        let got: Vec<(u16, Vec<u8>)> = events
            .iter()
            .filter_map(|e| match e {
                Event::Message {
                    to,
                    stream,
                    ppid,
                    data,
                } if *to == addr && *ppid == sctp::ppid::BINARY => Some((*stream, data.clone())),
                _ => None,
            })
            .collect();
        let first_difference = got.iter().zip(&want).position(|(g, w)| g != w);
        assert!(
            got == want,
            "{side}: {} messages against {}, first difference at {first_difference:?}",
            got.len(),
            want.len()
        );
    }
    // The channel of each stream, by label.
    let label_of: BTreeMap<u16, String> = conversations
        .values()
        .flat_map(|a| a.channels.values())
        .map(|c| (c.stream, c.label.clone()))
        .collect();
    // Channel by channel (the record's batches of the two channels were
    // written in the order the peer's loops took them, not the order its
    // stack delivered them), what each application got, in order.
    for (side, addr) in [("client", client_addr), ("server", server_addr)] {
        for label in ["ReliableDataChannel", "UnreliableDataChannel"] {
            let want: Vec<Vec<u8>> = of(&truth, "batch", side, Some("received"))
                .filter(|b| b["label"] == label)
                .map(|b| unhex(b["hex"].as_str().unwrap()))
                .collect();
            let got: Vec<Vec<u8>> = events
                .iter()
                .filter_map(|e| match e {
                    Event::Batch { to, stream, data }
                        if *to == addr && label_of[stream] == label =>
                    {
                        Some(data.clone())
                    }
                    _ => None,
                })
                .collect();
            assert!(!want.is_empty(), "{side} {label}");
            let first_difference = got.iter().zip(&want).position(|(g, w)| g != w);
            assert!(
                got == want,
                "{side} {label}: {} batches against {}, first difference at {first_difference:?}",
                got.len(),
                want.len(),
            );
        }
    }
    // The game layer RakNet's flows use reads the batches: every game
    // packet each application received, named, byte for byte.
    let mut game = crate::bedrock::GameFlow::new(None, Default::default(), true);
    let mut packets: Vec<(&str, String, String, Vec<u8>)> = Vec::new();
    for e in &events {
        let Event::Batch { to, stream, data } = e else {
            continue;
        };
        let (dir, side) = if *to == server_addr {
            (crate::dissect::Dir::C2s, "server")
        } else if *to == client_addr {
            (crate::dissect::Dir::S2c, "client")
        } else {
            continue; // to the relay: what a peer sent, not what one got
        };
        for g in game.batch(dir, data) {
            match g {
                crate::bedrock::GameEvent::Packet(p) => packets.push((
                    side,
                    label_of[stream].clone(),
                    p.name.unwrap_or("?").to_string(),
                    p.data.to_vec(),
                )),
                crate::bedrock::GameEvent::Opaque(o) => panic!("{o:?}"),
            }
        }
    }
    let want: Vec<(&str, String, String, Vec<u8>)> = truth
        .iter()
        .filter(|r| r["type"] == "packet" && r["event"] == "received")
        .map(|r| {
            let side = if r["side"] == "server" {
                "server"
            } else {
                "client"
            };
            (
                side,
                r["label"].as_str().unwrap().to_string(),
                r["name"].as_str().unwrap().to_string(),
                unhex(r["hex"].as_str().unwrap()),
            )
        })
        .collect();
    // Each side's packets, channel by channel, in the order it got them.
    for side in ["server", "client"] {
        for label in ["ReliableDataChannel", "UnreliableDataChannel"] {
            let pick = |v: &[(&str, String, String, Vec<u8>)]| -> Vec<(String, Vec<u8>)> {
                v.iter()
                    .filter(|p| p.0 == side && p.1 == label)
                    .map(|p| (p.2.clone(), p.3.clone()))
                    .collect()
            };
            let (got, want) = (pick(&packets), pick(&want));
            assert!(!want.is_empty(), "{side} {label}");
            let names = |v: &[(String, Vec<u8>)]| -> Vec<String> {
                v.iter().map(|p| p.0.clone()).collect()
            };
            assert_eq!(names(&got), names(&want), "{side} {label}");
            assert!(got == want, "{side} {label}: the same names, other bytes");
        }
    }
    let all = || conversations.values().flat_map(|a| a.counts.values());
    let total: u64 = all().map(|c| c.decrypted).sum();
    let sealed: u64 = all().map(|c| c.encrypted).sum();
    assert_eq!(total, sealed, "every sealed record opened");
}

/// A key that comes after the hellos (a pcapng's Decryption Secrets Block
/// written once the writer's side knew it, as `proxy -w` does) still
/// opens the records after it, with no anomaly; a key log that never
/// names the association is said once, at its first encrypted record.
#[test]
fn a_key_that_comes_after_the_hellos_opens_what_follows() {
    use super::association::{Association, Event, Problem};
    let name = "nethernet-join";
    let text = std::fs::read_to_string(sample(&format!("{name}.keylog"))).unwrap();
    let reader = crate::capture::CaptureReader::open(&sample(&format!("{name}.pcap"))).unwrap();
    let datagrams: Vec<_> = reader.map(|d| d.unwrap()).collect();
    let run = |later: &str| {
        let mut a = Association::new(delivery::Limits::default(), false);
        let (mut keylog, mut events) = (dtls::KeyLog::default(), Vec::new());
        for d in &datagrams {
            if a.suite.is_some() && keylog.is_empty() {
                // After the ServerHello: the key arrives.
                keylog.add(later);
            }
            let k = (&keylog, &Default::default());
            a.datagram(d.src, d.dst, &d.payload, k, &mut events);
        }
        let undecryptable = events
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    Event::Anomaly {
                        kind: Problem::Undecryptable,
                        ..
                    }
                )
            })
            .count();
        (a.decrypts(), a.channels.len(), undecryptable)
    };
    assert_eq!(run(&text), (true, 2, 0));
    let other = "CLIENT_RANDOM 00000000000000000000000000000000000000000000000000000000000000ff \
                 000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000";
    assert_eq!(run(other), (false, 0, 1));
}
