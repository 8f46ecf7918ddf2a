//! The text lines of a `handshake` record (its keys: `records::handshake`).

use std::fmt::Write as _;

/// The name the command line knows the record by.
pub(crate) use crate::records::handshake::HandshakeRecord as HandshakeJson;

impl crate::records::handshake::HandshakeRecord<'_> {
    /// The attempt as text: a heading line, then a line per step.
    pub(crate) fn lines(&self) -> String {
        let a = self.attempt;
        let addr = |s: Option<std::net::SocketAddr>| s.map_or("?".into(), |s| s.to_string());
        let mut s = format!(
            "flow {} attempt {}  {} → {}  {}: {}",
            a.flow,
            a.number,
            addr(a.client),
            addr(a.server),
            a.outcome,
            a.diagnosis
        );
        for st in &a.steps {
            let _ = write!(
                s,
                "\n  {:>+11.6}  {}  {:<30} {}",
                st.ts.saturating_sub(a.start).as_secs_f64(),
                st.dir.map_or("   ", |d| d.as_str()),
                st.step,
                st.detail
            );
        }
        if a.steps_omitted > 0 {
            let _ = write!(s, "\n  ({} more steps not shown)", a.steps_omitted);
        }
        if let Some(g) = &self.game {
            let _ = write!(s, "\n  game login: {g}");
        }
        s
    }
}
