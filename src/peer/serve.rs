//! `serve`'s setup: the server bound with its pong, then RakNet (echo,
//! replay) or Bedrock serving.

use std::net::SocketAddr;

use super::run::{Dialect, Outcome, Report, ServePlan};
use super::Server;

/// Everything `serve` is told: where, how, and what to play.
pub struct ServeSetup {
    /// The address to bind.
    pub listen: SocketAddr,
    /// The RakNet spoken (a Bedrock server: its game version's protocol).
    pub dialect: Dialect,
    /// Clients connected at once at most.
    pub max_clients: usize,
    /// The largest MTU accepted, in bytes (clamped to 576 to 1492).
    pub mtu: u16,
    /// `--motd`: a Minecraft pong with this text.
    pub motd: Option<String>,
    /// `--pong-hex`: these bytes.
    pub pong_hex: Option<Vec<u8>>,
    /// The captured server's pong (`--replay`), when no other is given.
    pub captured_pong: Option<Vec<u8>>,
    /// The captured server's RakNet protocol (`--replay`), spoken unless
    /// the dialect gives one.
    pub captured_protocol: Option<u8>,
    /// What to do with a RakNet client (without `bedrock`).
    pub plan: ServePlan,
    /// `--bedrock`: log clients in to the game.
    pub bedrock: Option<crate::peer::bedrock::BedrockServePlan>,
    /// With `bedrock`: NetherNet too (or alone).
    pub nethernet: Option<crate::peer::nethernet_serve::NetherNetServePlan>,
}

impl ServeSetup {
    /// A server on `listen` speaking `dialect` to `max_clients` at most:
    /// MTUs up to 1492, the pong its own, echoing nothing, playing nothing.
    pub fn new(listen: SocketAddr, dialect: Dialect, max_clients: usize) -> ServeSetup {
        ServeSetup {
            listen,
            dialect,
            max_clients,
            mtu: 1492,
            motd: None,
            pong_hex: None,
            captured_pong: None,
            captured_protocol: None,
            plan: ServePlan::default(),
            bedrock: None,
            nethernet: None,
        }
    }
}

/// `serve`: bind, set the pong, serve. `Err` when the address cannot be
/// bound (in words).
pub(crate) fn serve_setup(
    s: ServeSetup,
    report: &mut dyn Report,
) -> anyhow::Result<Result<Outcome, String>> {
    let guid = super::run::new_guid()?;
    // A Bedrock server speaks its game version's RakNet protocol (and only
    // it, as the vanilla server does), whatever `--dialect` says.
    let dialect = match &s.bedrock {
        Some(b) => crate::peer::bedrock::game_dialect_of(
            &b.version,
            s.dialect.protocol,
            s.dialect.addresses,
        ),
        None => s.dialect,
    };
    let mut cfg = dialect.server(s.captured_protocol);
    cfg.guid = guid;
    cfg.max_clients = s.max_clients;
    cfg.max_mtu = s.mtu.clamp(576, 1492);
    let mut server = match Server::bind(s.listen, cfg) {
        Ok(server) => server,
        Err(e) => return Ok(Err(format!("cannot listen on {}: {e}", s.listen))),
    };
    let port = server.local_addr()?.port();
    server.set_pong(match (&s.motd, &s.pong_hex, &s.bedrock) {
        (Some(text), _, _) => super::run::minecraft_pong(text, guid, port, s.max_clients),
        (None, Some(h), _) => h.clone(),
        (None, None, Some(b)) => {
            crate::peer::bedrock::bedrock_pong(&b.version, guid, port, s.max_clients)
        }
        (None, None, None) => s
            .captured_pong
            .clone()
            .unwrap_or_else(|| b"raknet-dissect".to_vec()),
    });
    Ok(Ok(match (&s.bedrock, &s.nethernet) {
        (Some(b), Some(n)) => {
            return crate::peer::nethernet_serve::serve(server, b, n, report);
        }
        (Some(b), None) => crate::peer::bedrock::serve_bedrock(&mut server, b, report)?,
        (None, _) => super::run::serve(&mut server, &s.plan, report)?,
    }))
}
