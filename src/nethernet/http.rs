//! HTTP/1.1 (RFC 9112) messages read from one direction of a TCP stream,
//! as NetherNet's signaling sends them in the clear to a dedicated
//! server: `GET /v1/join` and its JSON status, `POST /v1/join/{networkId}`
//! with the SDP offer and its answer.
//!
//! [`Stream`] is fed the stream's bytes in order, as they are reassembled,
//! and yields each message when its body is complete (by
//! `Content-Length`, by chunks, or for a response with neither, at the
//! stream's end). Every size is bounded: a head past [`MAX_HEAD`] bytes or
//! a body past [`MAX_BODY`] is an error and ends the reading of that
//! stream.

/// A message's start line and headers, bytes at most.
pub const MAX_HEAD: usize = 16 << 10;
/// A message's body, bytes at most (an SDP is a few KB; the status JSON
/// less).
pub const MAX_BODY: usize = 1 << 20;
/// Headers kept per message at most.
pub const MAX_HEADERS: usize = 64;

/// The start of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// A request: its method and target (`GET`, `/v1/join`).
    Request {
        /// `GET`, `POST`, ...
        method: String,
        /// The path and query (`/v1/join/1234`).
        target: String,
    },
    /// A response: its status code and reason phrase.
    Response {
        /// The status code (200, 404, ...).
        status: u16,
        /// The reason phrase.
        reason: String,
    },
}

/// One HTTP message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The request or status line.
    pub start: Start,
    /// `HTTP/1.1` or `HTTP/1.0`.
    pub version: String,
    /// Names as sent, in order.
    pub headers: Vec<(String, String)>,
    /// The body, after the length or the chunks are taken off.
    pub body: Vec<u8>,
    /// Offset of the message's first byte in the stream.
    pub at: u64,
}

impl Message {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why a stream stopped being read as HTTP.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    #[error("at stream byte {at}: {what}")]
    /// Bytes that are not an HTTP message: where, and what.
    Malformed {
        /// The stream offset of the message.
        at: u64,
        /// What is wrong, in words.
        what: String,
    },
    #[error("at stream byte {at}: a message head past {MAX_HEAD} bytes")]
    /// A head that never ends within the bound.
    HeadTooLong {
        /// The stream offset of the message.
        at: u64,
    },
    #[error("at stream byte {at}: a body of {len} bytes, past the {MAX_BODY} read")]
    /// A body longer than the bound (its declared or reached length).
    BodyTooLong {
        /// The stream offset of the message.
        at: u64,
        /// The body's declared or reached length.
        len: u64,
    },
}

/// How the body of the message under way ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(usize),
    Chunked,
    UntilClose,
}

/// One direction of a TCP stream, read as HTTP messages.
#[derive(Debug, Default)]
pub struct Stream {
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    base: u64,
    /// The message whose head was read, waiting for its body.
    pending: Option<(Message, Framing, usize)>,
    failed: bool,
}

impl Stream {
    /// A stream with nothing read yet.
    pub fn new() -> Self {
        Stream::default()
    }

    /// Take the next bytes of the stream; the messages they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Message>, HttpError> {
        if self.failed {
            return Ok(Vec::new());
        }
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        loop {
            match self.step() {
                Ok(Some(m)) => out.push(m),
                Ok(None) => break,
                Err(e) => {
                    self.failed = true;
                    self.buf = Vec::new();
                    return Err(e);
                }
            }
        }
        Ok(out)
    }

    /// The stream ended: a response that runs until the close is whole.
    pub fn finish(&mut self) -> Option<Message> {
        match self.pending.take() {
            Some((mut m, Framing::UntilClose, head)) => {
                m.body = self.buf[head..].to_vec();
                self.buf.clear();
                Some(m)
            }
            _ => None,
        }
    }

    /// Bytes held, not yet a whole message.
    pub fn held(&self) -> usize {
        self.buf.len()
    }

    fn consume(&mut self, n: usize) {
        self.buf.drain(..n);
        self.base += n as u64;
    }

    fn step(&mut self) -> Result<Option<Message>, HttpError> {
        if self.pending.is_none() {
            let Some(end) = find(&self.buf, b"\r\n\r\n") else {
                if self.buf.len() > MAX_HEAD {
                    return Err(HttpError::HeadTooLong { at: self.base });
                }
                return Ok(None);
            };
            if end > MAX_HEAD {
                return Err(HttpError::HeadTooLong { at: self.base });
            }
            let (m, framing) = head(&self.buf[..end], self.base)?;
            self.pending = Some((m, framing, end + 4));
        }
        let Some((_, framing, head_len)) = &self.pending else {
            return Ok(None);
        };
        let (framing, head_len) = (*framing, *head_len);
        let at = self.base;
        let body = match framing {
            Framing::Length(n) => {
                if self.buf.len() < head_len + n {
                    return Ok(None);
                }
                let b = self.buf[head_len..head_len + n].to_vec();
                self.consume(head_len + n);
                b
            }
            Framing::Chunked => match dechunk(&self.buf[head_len..], at + head_len as u64)? {
                Some((b, used)) => {
                    self.consume(head_len + used);
                    b
                }
                None => {
                    if self.buf.len() - head_len > MAX_BODY + MAX_HEAD {
                        return Err(HttpError::BodyTooLong {
                            at,
                            len: (self.buf.len() - head_len) as u64,
                        });
                    }
                    return Ok(None);
                }
            },
            Framing::UntilClose => {
                if self.buf.len() - head_len > MAX_BODY {
                    return Err(HttpError::BodyTooLong {
                        at,
                        len: (self.buf.len() - head_len) as u64,
                    });
                }
                return Ok(None);
            }
        };
        let Some((mut m, _, _)) = self.pending.take() else {
            return Ok(None);
        };
        m.body = body;
        Ok(Some(m))
    }
}

/// A request as a NetherNet client sends it: `METHOD TARGET HTTP/1.1`,
/// `Host`, a `Content-Type` and `Content-Length` when there is a body, and
/// `Connection: close` (one request per connection, as the game's client
/// makes them).
pub fn request(
    method: &str,
    target: &str,
    host: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> Vec<u8> {
    let mut out = format!("{method} {target} HTTP/1.1\r\nHost: {host}\r\n");
    if let Some(t) = content_type {
        out.push_str(&format!("Content-Type: {t}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    out.push_str("Connection: close\r\n\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A message's head (without its blank line) and how its body ends.
fn head(bytes: &[u8], at: u64) -> Result<(Message, Framing), HttpError> {
    let bad = |what: String| HttpError::Malformed { at, what };
    let text = std::str::from_utf8(bytes).map_err(|_| bad("a head that is not text".into()))?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or("");
    let mut parts = first.splitn(3, ' ');
    let (a, b, c) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let (start, version) = if a.starts_with("HTTP/") {
        let status = b
            .parse()
            .ok()
            .filter(|s| (100..1000).contains(s))
            .ok_or_else(|| bad(format!("a status line without a status: {first:?}")))?;
        (
            Start::Response {
                status,
                reason: c.to_string(),
            },
            a.to_string(),
        )
    } else if c.starts_with("HTTP/") && !a.is_empty() && !b.is_empty() {
        (
            Start::Request {
                method: a.to_string(),
                target: b.to_string(),
            },
            c.to_string(),
        )
    } else {
        return Err(bad(format!(
            "neither a request nor a status line: {first:?}"
        )));
    };
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad(format!("a header line without a colon: {line:?}")));
        };
        if headers.len() < MAX_HEADERS {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    let m = Message {
        start,
        version,
        headers,
        body: Vec::new(),
        at,
    };
    let chunked = m
        .header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    let framing = if chunked {
        Framing::Chunked
    } else if let Some(n) = m.header("content-length") {
        let n: u64 = n
            .parse()
            .map_err(|_| bad(format!("a Content-Length that is not a number: {n:?}")))?;
        if n > MAX_BODY as u64 {
            return Err(HttpError::BodyTooLong { at, len: n });
        }
        Framing::Length(n as usize)
    } else {
        match &m.start {
            // A request without a length has no body; so has a response
            // that cannot have one.
            Start::Request { .. } => Framing::Length(0),
            Start::Response { status, .. } if *status < 200 || *status == 204 || *status == 304 => {
                Framing::Length(0)
            }
            Start::Response { .. } => Framing::UntilClose,
        }
    };
    Ok((m, framing))
}

/// A chunked body at the start of `b`: its bytes and the bytes it took,
/// or `None` while it is incomplete.
fn dechunk(b: &[u8], at: u64) -> Result<Option<(Vec<u8>, usize)>, HttpError> {
    let mut body = Vec::new();
    let mut pos = 0;
    loop {
        let Some(eol) = find(&b[pos..], b"\r\n") else {
            return Ok(None);
        };
        let size_line = std::str::from_utf8(&b[pos..pos + eol]).unwrap_or("");
        let size_hex = size_line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16).map_err(|_| HttpError::Malformed {
            at: at + pos as u64,
            what: format!("a chunk size that is not hex: {size_line:?}"),
        })?;
        if body.len() + size > MAX_BODY {
            return Err(HttpError::BodyTooLong {
                at,
                len: (body.len() + size) as u64,
            });
        }
        pos += eol + 2;
        if size == 0 {
            // Trailers, then the blank line.
            let Some(end) = find(&b[pos..], b"\r\n") else {
                return Ok(None);
            };
            if end == 0 {
                return Ok(Some((body, pos + 2)));
            }
            let Some(t) = find(&b[pos..], b"\r\n\r\n") else {
                return Ok(None);
            };
            return Ok(Some((body, pos + t + 4)));
        }
        if b.len() < pos + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&b[pos..pos + size]);
        pos += size + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_as_the_request_it_is() {
        let offer = b"v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n";
        for (method, target, ctype, body) in [
            ("GET", "/v1/join", None, &b""[..]),
            ("POST", "/v1/join/42", Some("application/sdp"), &offer[..]),
        ] {
            let bytes = request(method, target, "127.0.0.1:19132", ctype, body);
            let m = Stream::new().push(&bytes).unwrap();
            assert_eq!(m.len(), 1, "{}", String::from_utf8_lossy(&bytes));
            let want = Start::Request {
                method: method.into(),
                target: target.into(),
            };
            assert_eq!(m[0].start, want);
            assert_eq!(m[0].header("host"), Some("127.0.0.1:19132"));
            assert_eq!(m[0].header("content-type"), ctype);
            assert_eq!(m[0].body, body);
        }
    }

    #[test]
    fn the_join_exchange_in_pieces() {
        let req = b"GET /v1/join HTTP/1.1\r\nHost: 127.0.0.1:19132\r\n\r\n\
            POST /v1/join/1234 HTTP/1.1\r\nContent-Type: application/sdp\r\nContent-Length: 5\r\n\r\nv=0\r\n";
        // Byte by byte: the same two messages.
        let mut s = Stream::new();
        let mut got = Vec::new();
        for b in req.iter() {
            got.extend(s.push(std::slice::from_ref(b)).unwrap());
        }
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0].start,
            Start::Request {
                method: "GET".into(),
                target: "/v1/join".into()
            }
        );
        assert_eq!(got[1].header("content-type"), Some("application/sdp"));
        assert_eq!(got[1].body, b"v=0\r\n");
        assert_eq!(got[1].at, 48);
        assert_eq!(s.held(), 0);
    }

    #[test]
    fn responses_by_length_chunks_and_close() {
        let mut s = Stream::new();
        let got = s
            .push(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            .unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].body, b"abcde");
        assert_eq!(
            got[1].start,
            Start::Response {
                status: 404,
                reason: "Not Found".into()
            }
        );
        let mut s = Stream::new();
        assert!(s
            .push(b"HTTP/1.0 200 OK\r\n\r\n{\"name\":")
            .unwrap()
            .is_empty());
        assert!(s.push(b"\"x\"}").unwrap().is_empty());
        assert_eq!(s.finish().unwrap().body, b"{\"name\":\"x\"}");
    }

    #[test]
    fn bounds_and_garbage() {
        let mut s = Stream::new();
        assert!(matches!(
            s.push(&vec![b'a'; MAX_HEAD + 1]),
            Err(HttpError::HeadTooLong { .. })
        ));
        // After an error the stream is no longer read.
        assert!(s.push(b"GET / HTTP/1.1\r\n\r\n").unwrap().is_empty());
        let mut s = Stream::new();
        let big = format!(
            "POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 1
        );
        assert!(matches!(
            s.push(big.as_bytes()),
            Err(HttpError::BodyTooLong { .. })
        ));
        let mut s = Stream::new();
        assert!(matches!(
            s.push(b"\x16\x03\x01\x02\x00\r\n\r\n"),
            Err(HttpError::Malformed { .. })
        ));
        let mut s = Stream::new();
        assert!(s
            .push(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
            .is_err());
    }
}
