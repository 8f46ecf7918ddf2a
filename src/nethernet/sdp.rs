//! SDP (RFC 8866) as NetherNet's signaling carries it: the offer a client
//! POSTs to `/v1/join/{networkId}` and the answer the server returns. What
//! a dissector needs of it: the ICE credentials (`a=ice-ufrag`,
//! `a=ice-pwd`: the password keys the STUN checks' MESSAGE-INTEGRITY), the
//! candidates, the certificate fingerprint DTLS must then show
//! (`a=fingerprint:sha-256`), the DTLS role (`a=setup`), the SCTP port and
//! largest message (`a=sctp-port`, `a=max-message-size`), and the identity
//! assertion (`a=identity`).
//!
//! Parsed leniently, as the stacks that write it differ: go-nethernet
//! writes `a=candidate:candidate:...` (the prefix doubled), lines may end
//! in CRLF or LF, and an attribute at session level stands for every
//! media section that lacks it.

use std::net::{IpAddr, SocketAddr};

/// An SDP's bytes at most (MJ's example is 1 KB; a host with many
/// interfaces lists a candidate per address).
pub const MAX_SDP: usize = 64 << 10;

/// Candidates kept at most.
pub const MAX_CANDIDATES: usize = 64;

/// One ICE candidate line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Its foundation (candidates of the same kind from the same base share it).
    pub foundation: String,
    /// Its component: 1 (RTP, or the only one for data channels).
    pub component: u16,
    /// `udp` or `tcp`, lowercased.
    pub transport: String,
    /// Its priority: a higher one is tried first.
    pub priority: u32,
    /// The address and port it offers.
    pub address: SocketAddr,
    /// `host`, `srflx`, `prflx` or `relay`.
    pub kind: String,
}

/// What an SDP says that the rest of a NetherNet session needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sdp {
    /// The ICE username fragment (`a=ice-ufrag`).
    pub ice_ufrag: Option<String>,
    /// The ICE password (`a=ice-pwd`): the key of MESSAGE-INTEGRITY on checks sent to this side.
    pub ice_pwd: Option<String>,
    /// `(algorithm, fingerprint)` as written (`("sha-256", "AB:CD:...")`),
    /// in order: the identity assertion signs them so.
    pub fingerprints: Vec<(String, String)>,
    /// `actpass`, `active` or `passive`: `active` is the DTLS client.
    pub setup: Option<String>,
    /// The candidates, as many as [`MAX_CANDIDATES`].
    pub candidates: Vec<Candidate>,
    /// Candidate lines that did not parse (kept out of `candidates`).
    pub bad_candidates: usize,
    /// `a=end-of-candidates`: full ICE, nothing trickles after.
    pub end_of_candidates: bool,
    /// The SCTP port (`a=sctp-port`; 5000 in WebRTC).
    pub sctp_port: Option<u16>,
    /// The largest message the sender takes (`a=max-message-size`).
    pub max_message_size: Option<u64>,
    /// The `a=identity:` value, as written (base64 of a JSON object).
    pub identity: Option<String>,
    /// The `m=` lines, as written (`application 9 UDP/DTLS/SCTP
    /// webrtc-datachannel`).
    pub media: Vec<String>,
}

/// Why an SDP was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SdpError {
    #[error("SDP of {0} bytes, more than the {MAX_SDP} read")]
    /// Its length.
    TooLong(usize),
    /// The text does not start with `v=0`.
    #[error("not SDP: it does not start with v=0")]
    NotSdp,
}

impl Sdp {
    /// The SDP `text`.
    pub fn parse(text: &str) -> Result<Sdp, SdpError> {
        if text.len() > MAX_SDP {
            return Err(SdpError::TooLong(text.len()));
        }
        let mut lines = text
            .lines()
            .map(|l| l.trim_end_matches('\r'))
            .filter(|l| !l.is_empty());
        if lines.next().map(str::trim) != Some("v=0") {
            return Err(SdpError::NotSdp);
        }
        let mut sdp = Sdp::default();
        for line in lines {
            if let Some(m) = line.strip_prefix("m=") {
                sdp.media.push(m.to_string());
                continue;
            }
            let Some(attr) = line.strip_prefix("a=") else {
                continue;
            };
            let (name, value) = attr.split_once(':').unwrap_or((attr, ""));
            // The first value wins: a session-level one, or the first
            // media section's.
            let keep = |slot: &mut Option<String>| {
                if slot.is_none() {
                    *slot = Some(value.trim().to_string());
                }
            };
            match name {
                "ice-ufrag" => keep(&mut sdp.ice_ufrag),
                "ice-pwd" => keep(&mut sdp.ice_pwd),
                "setup" => keep(&mut sdp.setup),
                "identity" => keep(&mut sdp.identity),
                "fingerprint" => {
                    if let Some((alg, fp)) = value.trim().split_once(' ') {
                        if sdp.fingerprints.len() < 8 {
                            sdp.fingerprints
                                .push((alg.to_string(), fp.trim().to_string()));
                        }
                    }
                }
                "candidate" => {
                    if sdp.candidates.len() >= MAX_CANDIDATES {
                        continue;
                    }
                    match candidate(value) {
                        Some(c) => sdp.candidates.push(c),
                        None => sdp.bad_candidates += 1,
                    }
                }
                "end-of-candidates" => sdp.end_of_candidates = true,
                "sctp-port" => sdp.sctp_port = sdp.sctp_port.or(value.trim().parse().ok()),
                "max-message-size" => {
                    sdp.max_message_size = sdp.max_message_size.or(value.trim().parse().ok())
                }
                _ => {}
            }
        }
        Ok(sdp)
    }

    /// The addresses of its UDP candidates of `like`'s family (IPv4 or
    /// IPv6), in order.
    pub fn udp_candidates(&self, like: std::net::IpAddr) -> Vec<std::net::SocketAddr> {
        self.candidates
            .iter()
            .filter(|c| c.transport == "udp" && c.address.is_ipv4() == like.is_ipv4())
            .map(|c| c.address)
            .collect()
    }

    /// The SHA-256 fingerprint, when the SDP gives one.
    pub fn sha256(&self) -> Option<&str> {
        self.fingerprints
            .iter()
            .find(|(a, _)| a.eq_ignore_ascii_case("sha-256"))
            .map(|(_, f)| f.as_str())
    }
}

/// A host candidate's priority for component 1 (RFC 8445 §5.1.2.1: type
/// preference 126, local preference 65535).
pub const HOST_PRIORITY: u32 = (126 << 24) | (65535 << 8) | 255;

/// What our side says in an offer or an answer: one data-channel section,
/// full ICE (host candidates, `a=end-of-candidates`), as the game's
/// peers write theirs.
#[derive(Debug, Clone)]
pub struct Local {
    /// The `o=` line's session id.
    pub session: u64,
    /// Our ICE username fragment.
    pub ice_ufrag: String,
    /// Our ICE password: the key of MESSAGE-INTEGRITY on checks sent to us.
    pub ice_pwd: String,
    /// The SHA-256 of our DTLS certificate, `AB:CD:...`.
    pub fingerprint_sha256: String,
    /// `actpass` in an offer; `active` (the DTLS client) or `passive` in an
    /// answer.
    pub setup: &'static str,
    /// Our host candidates (the first is the `m=` and `c=` lines').
    pub candidates: Vec<SocketAddr>,
    /// The largest message we take (`a=max-message-size`).
    pub max_message_size: u64,
    /// The `a=identity` value ([`super::identity::attribute`]), if any.
    pub identity: Option<String>,
}

impl Local {
    /// The SDP text, lines ending in CRLF.
    pub fn write(&self) -> String {
        let first = self.candidates.first().copied();
        let port = first.map_or(9, |a| a.port());
        let ip = first.map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
        let family = if ip.is_ipv6() { "IP6" } else { "IP4" };
        let mut l = vec![
            "v=0".to_string(),
            format!("o=- {0} {0} IN IP4 0.0.0.0", self.session),
            "s=-".into(),
            "t=0 0".into(),
            "a=group:BUNDLE 0".into(),
            "a=msid-semantic:WMS *".into(),
        ];
        if let Some(i) = &self.identity {
            l.push(format!("a=identity:{i}"));
        }
        l.push(format!(
            "m=application {port} UDP/DTLS/SCTP webrtc-datachannel"
        ));
        l.push(format!("c=IN {family} {ip}"));
        l.push("a=mid:0".into());
        l.push("a=sctp-port:5000".into());
        l.push(format!("a=max-message-size:{}", self.max_message_size));
        for (i, c) in self.candidates.iter().enumerate() {
            l.push(format!(
                "a=candidate:{} 1 udp {} {} {} typ host",
                i + 1,
                HOST_PRIORITY - i as u32,
                c.ip(),
                c.port()
            ));
        }
        l.push("a=end-of-candidates".into());
        l.push(format!("a=ice-ufrag:{}", self.ice_ufrag));
        l.push(format!("a=ice-pwd:{}", self.ice_pwd));
        l.push(format!("a=fingerprint:sha-256 {}", self.fingerprint_sha256));
        l.push(format!("a=setup:{}", self.setup));
        let mut text = l.join("\r\n");
        text.push_str("\r\n");
        text
    }
}

/// A candidate's value (after `a=candidate:`): `foundation component
/// transport priority address port typ kind ...`, with go-nethernet's
/// doubled `candidate:` prefix taken off.
fn candidate(value: &str) -> Option<Candidate> {
    let value = value.trim();
    let value = value.strip_prefix("candidate:").unwrap_or(value);
    let mut f = value.split_ascii_whitespace();
    let foundation = f.next()?.to_string();
    let component = f.next()?.parse().ok()?;
    let transport = f.next()?.to_ascii_lowercase();
    let priority = f.next()?.parse().ok()?;
    let ip: IpAddr = f.next()?.parse().ok()?;
    let port = f.next()?.parse().ok()?;
    if f.next()? != "typ" {
        return None;
    }
    let kind = f.next()?.to_string();
    Some(Candidate {
        foundation,
        component,
        transport,
        priority,
        address: SocketAddr::new(ip, port),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_sdp_reads_back_as_written() {
        let local = Local {
            session: 42,
            ice_ufrag: "abcd".into(),
            ice_pwd: "0123456789abcdefghijkl".into(),
            fingerprint_sha256: "AB:CD:EF".into(),
            setup: "actpass",
            candidates: vec!["127.0.0.1:40000".parse().unwrap()],
            max_message_size: 262_144,
            identity: Some("e30=".into()),
        };
        let text = local.write();
        let sdp = Sdp::parse(&text).unwrap();
        assert_eq!(sdp.ice_ufrag.as_deref(), Some("abcd"));
        assert_eq!(sdp.ice_pwd.as_deref(), Some("0123456789abcdefghijkl"));
        assert_eq!(sdp.sha256(), Some("AB:CD:EF"));
        assert_eq!(sdp.setup.as_deref(), Some("actpass"));
        assert_eq!(sdp.identity.as_deref(), Some("e30="));
        assert_eq!(
            (sdp.sctp_port, sdp.max_message_size),
            (Some(5000), Some(262_144))
        );
        assert!(sdp.end_of_candidates);
        assert_eq!(sdp.candidates.len(), 1);
        let c = &sdp.candidates[0];
        assert_eq!(
            (c.address, c.priority, c.kind.as_str()),
            (local.candidates[0], HOST_PRIORITY, "host")
        );
        assert_eq!(
            sdp.media,
            ["application 40000 UDP/DTLS/SCTP webrtc-datachannel"]
        );
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        assert!(lines.iter().all(|l| l.ends_with("\r\n")), "{text:?}");
        assert_eq!(lines.len(), 18);
    }

    #[test]
    fn an_offer_with_go_nethernets_doubled_candidate_prefix() {
        let offer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n\
            a=identity:eyJpZHAiOnt9fQ==\r\n\
            m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n\
            c=IN IP4 0.0.0.0\r\n\
            a=ice-ufrag:abcd\r\na=ice-pwd:0123456789012345678901\r\n\
            a=fingerprint:sha-256 ab:cd:EF\r\na=setup:actpass\r\n\
            a=candidate:candidate:1 1 UDP 2130706431 127.0.0.1 50000 typ host\r\n\
            a=candidate:2 1 udp 1694498815 ::1 50001 typ host generation 0\r\n\
            a=candidate:3 1 udp nonsense\r\n\
            a=end-of-candidates\r\na=sctp-port:5000\r\na=max-message-size:262144\r\n";
        let s = Sdp::parse(offer).unwrap();
        assert_eq!(s.ice_ufrag.as_deref(), Some("abcd"));
        assert_eq!(s.ice_pwd.as_deref(), Some("0123456789012345678901"));
        assert_eq!(s.sha256(), Some("ab:cd:EF"));
        assert_eq!(s.setup.as_deref(), Some("actpass"));
        assert_eq!(s.candidates.len(), 2);
        assert_eq!(s.candidates[0].address, "127.0.0.1:50000".parse().unwrap());
        assert_eq!(
            (
                s.candidates[0].transport.as_str(),
                s.candidates[1].kind.as_str()
            ),
            ("udp", "host")
        );
        assert_eq!(s.candidates[1].address, "[::1]:50001".parse().unwrap());
        assert_eq!(s.bad_candidates, 1);
        assert!(s.end_of_candidates);
        assert_eq!(
            (s.sctp_port, s.max_message_size),
            (Some(5000), Some(262144))
        );
        assert_eq!(s.identity.as_deref(), Some("eyJpZHAiOnt9fQ=="));
        assert_eq!(s.media, ["application 9 UDP/DTLS/SCTP webrtc-datachannel"]);
        assert_eq!(Sdp::parse("HTTP/1.1 200 OK"), Err(SdpError::NotSdp));
        assert!(matches!(
            Sdp::parse(&"v=0\n".repeat(20000)),
            Err(SdpError::TooLong(_))
        ));
    }
}
