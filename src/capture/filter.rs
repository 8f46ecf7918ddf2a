//! Simple capture filters (`live -f`): host and port expressions over the
//! UDP endpoints, in tcpdump's words.
//!
//! ```text
//! expr   := term (("or" | "||") term)*
//! term   := factor (("and" | "&&") factor)*
//! factor := ("not" | "!") factor | "(" expr ")" | prim
//! prim   := ["src" | "dst"] ("host" ADDR | "port" N) | "udp" | "ip" | "ip6"
//! ```
//! `host 127.0.0.1 and port 19132`, `udp port 19132 or port 7777`,
//! `not src port 53`. A bare `port N` matches either end.

use std::net::{IpAddr, SocketAddr};

/// A parsed filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// `a or b`: any of them matches.
    Or(Vec<Filter>),
    /// `a and b`: all of them match.
    And(Vec<Filter>),
    /// `not a`.
    Not(Box<Filter>),
    /// `[src|dst] host ADDR`.
    Host(End, IpAddr),
    /// `[src|dst] port N`.
    Port(End, u16),
    /// `udp`: every datagram (they all are UDP).
    Any,
    /// `ip`: IPv4 datagrams.
    Ipv4,
    /// `ip6`: IPv6 datagrams.
    Ipv6,
}

/// Which end of the datagram a primitive looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// `src`: the sender.
    Src,
    /// `dst`: the receiver.
    Dst,
    /// Neither word: either end.
    Either,
}

/// A filter that does not parse: what and where (a byte offset).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("filter: {what} at byte {at}")]
pub struct FilterError {
    pub(crate) at: usize,
    pub(crate) what: String,
}

impl Filter {
    /// Parse a filter in the syntax above.
    pub fn parse(text: &str) -> Result<Filter, FilterError> {
        let tokens = tokenize(text);
        let mut p = Parser {
            tokens,
            i: 0,
            len: text.len(),
        };
        let f = p.expr()?;
        if let Some((at, t)) = p.tokens.get(p.i) {
            return Err(FilterError {
                at: *at,
                what: format!("unexpected {t:?}"),
            });
        }
        Ok(f)
    }

    /// Whether a datagram from `src` to `dst` passes.
    pub fn matches(&self, src: SocketAddr, dst: SocketAddr) -> bool {
        let either = |end: End, f: &dyn Fn(SocketAddr) -> bool| match end {
            End::Src => f(src),
            End::Dst => f(dst),
            End::Either => f(src) || f(dst),
        };
        match self {
            Filter::Or(v) => v.iter().any(|f| f.matches(src, dst)),
            Filter::And(v) => v.iter().all(|f| f.matches(src, dst)),
            Filter::Not(f) => !f.matches(src, dst),
            Filter::Host(end, ip) => either(*end, &|a| a.ip() == *ip),
            Filter::Port(end, port) => either(*end, &|a| a.port() == *port),
            Filter::Any => true,
            Filter::Ipv4 => src.is_ipv4(),
            Filter::Ipv6 => src.is_ipv6(),
        }
    }
}

fn tokenize(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(usize, String)> = None;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() || c == '(' || c == ')' || c == '!' {
            if let Some(t) = cur.take() {
                out.push(t);
            }
            if !c.is_whitespace() {
                out.push((i, c.to_string()));
            }
        } else {
            cur.get_or_insert((i, String::new())).1.push(c);
        }
    }
    if let Some(t) = cur {
        out.push(t);
    }
    out
}

struct Parser {
    tokens: Vec<(usize, String)>,
    i: usize,
    len: usize,
}

impl Parser {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.i).map(|(_, t)| t.as_str())
    }

    fn at(&self) -> usize {
        self.tokens.get(self.i).map_or(self.len, |(a, _)| *a)
    }

    fn err<T>(&self, what: impl Into<String>) -> Result<T, FilterError> {
        Err(FilterError {
            at: self.at(),
            what: what.into(),
        })
    }

    fn next(&mut self) -> Option<String> {
        let t = self.tokens.get(self.i).map(|(_, t)| t.clone());
        self.i += 1;
        t
    }

    fn expr(&mut self) -> Result<Filter, FilterError> {
        let mut v = vec![self.term()?];
        while matches!(self.peek(), Some("or" | "||")) {
            self.i += 1;
            v.push(self.term()?);
        }
        Ok(if v.len() == 1 {
            v.remove(0)
        } else {
            Filter::Or(v)
        })
    }

    fn term(&mut self) -> Result<Filter, FilterError> {
        let mut v = vec![self.factor()?];
        while matches!(self.peek(), Some("and" | "&&")) {
            self.i += 1;
            v.push(self.factor()?);
        }
        Ok(if v.len() == 1 {
            v.remove(0)
        } else {
            Filter::And(v)
        })
    }

    fn factor(&mut self) -> Result<Filter, FilterError> {
        match self.peek() {
            Some("not" | "!") => {
                self.i += 1;
                Ok(Filter::Not(Box::new(self.factor()?)))
            }
            Some("(") => {
                self.i += 1;
                let f = self.expr()?;
                if self.peek() != Some(")") {
                    return self.err("a missing `)`");
                }
                self.i += 1;
                Ok(f)
            }
            _ => self.prim(),
        }
    }

    fn prim(&mut self) -> Result<Filter, FilterError> {
        let end = match self.peek() {
            Some("src") => {
                self.i += 1;
                End::Src
            }
            Some("dst") => {
                self.i += 1;
                End::Dst
            }
            _ => End::Either,
        };
        if end == End::Either && self.peek() == Some("udp") {
            self.i += 1;
            // `udp port N` and `udp host A` read as `port N`, `host A`.
            return match self.peek() {
                Some("port" | "host" | "src" | "dst") => self.prim(),
                _ => Ok(Filter::Any),
            };
        }
        let at = self.at();
        match self.next().as_deref() {
            Some("host") => {
                let at = self.at();
                let Some(a) = self.next() else {
                    return self.err("an address after `host`");
                };
                a.parse::<IpAddr>()
                    .map(|ip| Filter::Host(end, ip))
                    .map_err(|_| FilterError {
                        at,
                        what: format!("{a:?} is not an IP address"),
                    })
            }
            Some("port") => {
                let at = self.at();
                let Some(p) = self.next() else {
                    return self.err("a number after `port`");
                };
                p.parse::<u16>()
                    .map(|n| Filter::Port(end, n))
                    .map_err(|_| FilterError {
                        at,
                        what: format!("{p:?} is not a port"),
                    })
            }
            Some("ip") if end == End::Either => Ok(Filter::Ipv4),
            Some("ip6") if end == End::Either => Ok(Filter::Ipv6),
            Some(other) => Err(FilterError {
                at,
                what: format!(
                    "{other:?}: expected host ADDR, port N, src/dst, udp, ip, ip6, not, or ( )"
                ),
            }),
            None => Err(FilterError {
                at,
                what: "an expression ends too soon".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().expect("address")
    }

    #[test]
    fn expressions() {
        let (c, s) = (a("10.0.0.1:50000"), a("127.0.0.1:19132"));
        let yes = [
            "port 19132",
            "udp port 19132",
            "dst port 19132",
            "src port 50000",
            "host 127.0.0.1 and port 19132",
            "port 1 or port 19132",
            "not port 53",
            "! (src host 127.0.0.1)",
            "udp",
            "ip",
            "(port 1 or port 50000) && dst host 127.0.0.1",
        ];
        for f in yes {
            assert!(Filter::parse(f).expect(f).matches(c, s), "{f}");
        }
        let no = ["src port 19132", "port 53", "host ::1", "ip6", "not udp"];
        for f in no {
            assert!(!Filter::parse(f).expect(f).matches(c, s), "{f}");
        }
    }

    #[test]
    fn errors_say_where() {
        assert_eq!(
            Filter::parse("port x").unwrap_err(),
            FilterError {
                at: 5,
                what: "\"x\" is not a port".into()
            }
        );
        assert_eq!(Filter::parse("port 1 and").unwrap_err().at, 10);
        assert_eq!(Filter::parse("(port 1").unwrap_err().what, "a missing `)`");
        assert_eq!(Filter::parse("tcp").unwrap_err().at, 0);
        assert_eq!(Filter::parse("port 1 port 2").unwrap_err().at, 7);
    }
}
