//! NetherNet's signaling as a client speaks it, on a std TCP socket: the
//! HTTP requests to a server's signaling port (the same number as its
//! RakNet UDP port on a dedicated server). Requests are written by
//! [`http::request`] and answers read by the passive dissector's own
//! [`http::Stream`], bounded as it is.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::nethernet::http::{self, HttpError, Start};

/// The path of the status request (NetherNet's "pong").
pub(crate) const JOIN_PATH: &str = "/v1/join";

/// A server's answer to one request.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    /// From the connect to the whole answer.
    pub(crate) rtt: Duration,
    pub(crate) status: u16,
    pub(crate) reason: String,
    pub(crate) content_type: Option<String>,
    pub(crate) body: Vec<u8>,
    /// What crossed the connection, for a capture.
    pub(crate) transcript: Transcript,
}

/// One request's connection as our socket saw it: its addresses, and
/// each side's bytes with when they went (since the Unix epoch).
#[derive(Debug, Clone)]
pub(crate) struct Transcript {
    pub(crate) local: SocketAddr,
    pub(crate) server: SocketAddr,
    /// When the connection was made.
    pub(crate) opened: Duration,
    /// The request, sent whole.
    pub(crate) sent: (Duration, Vec<u8>),
    /// The answer, as each read returned it.
    pub(crate) received: Vec<(Duration, Vec<u8>)>,
}

/// Now, since the Unix epoch (a capture's time stamps).
pub(crate) fn unix_now() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

impl Transcript {
    /// The connection into `rec` as TCP segments: the SYNs, the request,
    /// the answer as it was read, the FINs at the end (sequence numbers
    /// from 0 each way; no acknowledgements).
    pub(crate) fn record(&self, rec: &mut crate::capture::write::Recorder) -> io::Result<()> {
        use crate::capture::TcpSegment;
        let seg = |seq: u32, syn, fin| TcpSegment {
            seq,
            syn,
            fin,
            rst: false,
        };
        let (c, s) = (self.local, self.server);
        rec.record_tcp_at(self.opened, c, s, seg(0, true, false), &[])?;
        rec.record_tcp_at(self.opened, s, c, seg(0, true, false), &[])?;
        rec.record_tcp_at(self.sent.0, c, s, seg(1, false, false), &self.sent.1)?;
        let mut at = 1u32;
        let mut last = self.sent.0;
        for (t, b) in &self.received {
            rec.record_tcp_at(*t, s, c, seg(at, false, false), b)?;
            at = at.wrapping_add(b.len() as u32);
            last = *t;
        }
        let ours = 1u32.wrapping_add(self.sent.1.len() as u32);
        rec.record_tcp_at(last, c, s, seg(ours, false, true), &[])?;
        rec.record_tcp_at(last, s, c, seg(at, false, true), &[])
    }
}

/// Why a request got no HTTP answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SignalingError {
    /// Nothing listens on the TCP port (a RakNet-only server).
    #[error("nothing listens on TCP {0} (connection refused)")]
    Refused(SocketAddr),
    #[error("no answer from TCP {0} within {1:?}")]
    Timeout(SocketAddr, Duration),
    #[error("TCP {0} closed the connection before a whole answer")]
    Closed(SocketAddr),
    #[error("TCP {0} answered what is not HTTP: {1}")]
    NotHttp(SocketAddr, HttpError),
    #[error("TCP {0}: {1}")]
    Io(SocketAddr, io::Error),
}

impl SignalingError {
    /// The step that failed, in the words of the records (`refused`,
    /// `timeout`, `closed`, `not_http`, `io_error`).
    pub(crate) fn step(&self) -> &'static str {
        match self {
            SignalingError::Refused(_) => "refused",
            SignalingError::Timeout(..) => "timeout",
            SignalingError::Closed(_) => "closed",
            SignalingError::NotHttp(..) => "not_http",
            SignalingError::Io(..) => "io_error",
        }
    }
}

/// One request to `target`, its answer read within `timeout` (connect
/// included). `host` is the `Host` header.
pub(crate) fn exchange(
    target: SocketAddr,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: &[u8],
    timeout: Duration,
) -> Result<Answer, SignalingError> {
    let timeout = timeout.max(Duration::from_millis(1));
    let start = Instant::now();
    let io_err = |e: io::Error| match e.kind() {
        io::ErrorKind::ConnectionRefused => SignalingError::Refused(target),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            SignalingError::Timeout(target, timeout)
        }
        _ => SignalingError::Io(target, e),
    };
    let mut s = TcpStream::connect_timeout(&target, timeout).map_err(io_err)?;
    let opened = unix_now();
    let _ = s.set_nodelay(true);
    let req = http::request(method, path, &target.to_string(), content_type, body);
    s.set_write_timeout(Some(timeout)).map_err(io_err)?;
    s.write_all(&req).map_err(io_err)?;
    let mut transcript = Transcript {
        local: s.local_addr().map_err(io_err)?,
        server: target,
        opened,
        sent: (unix_now(), req),
        received: Vec::new(),
    };
    let mut stream = http::Stream::new();
    let mut buf = vec![0u8; 16 << 10];
    loop {
        let left = timeout
            .checked_sub(start.elapsed())
            .filter(|d| !d.is_zero())
            .ok_or(SignalingError::Timeout(target, timeout))?;
        s.set_read_timeout(Some(left)).map_err(io_err)?;
        let n = match s.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(e)),
        };
        if n > 0 {
            transcript.received.push((unix_now(), buf[..n].to_vec()));
        }
        let message = if n == 0 {
            stream.finish()
        } else {
            let mut m = stream
                .push(&buf[..n])
                .map_err(|e| SignalingError::NotHttp(target, e))?;
            (!m.is_empty()).then(|| m.swap_remove(0))
        };
        match message {
            Some(m) => {
                let Start::Response { status, reason } = m.start.clone() else {
                    let e = HttpError::Malformed {
                        at: m.at,
                        what: "a request where a response was due".into(),
                    };
                    return Err(SignalingError::NotHttp(target, e));
                };
                return Ok(Answer {
                    rtt: start.elapsed(),
                    status,
                    reason,
                    content_type: m.header("content-type").map(str::to_owned),
                    body: m.body,
                    transcript,
                });
            }
            None if n == 0 => return Err(SignalingError::Closed(target)),
            None => {}
        }
    }
}

/// `GET /v1/join`: the server's status, as the game's client asks before
/// it offers (a non-2xx status means no NetherNet there).
pub(crate) fn join_status(target: SocketAddr, timeout: Duration) -> Result<Answer, SignalingError> {
    exchange(target, "GET", JOIN_PATH, None, &[], timeout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server that answers one connection with `answer`, after reading
    /// the request's head; the request it read.
    fn serve_once(answer: &'static [u8]) -> (SocketAddr, std::thread::JoinHandle<Vec<u8>>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 1024];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = c.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            c.write_all(answer).unwrap();
            got
        });
        (addr, t)
    }

    #[test]
    fn a_status_answer_by_length_or_until_the_close() {
        for answer in [
            &b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":1}    "[..],
            &b"HTTP/1.0 200 OK\r\n\r\n{\"a\":1}    "[..],
        ] {
            let (addr, t) = serve_once(answer);
            let a = join_status(addr, Duration::from_secs(5)).unwrap();
            let req = t.join().unwrap();
            assert!(req.starts_with(b"GET /v1/join HTTP/1.1\r\n"));
            assert_eq!((a.status, a.body.as_slice()), (200, &b"{\"a\":1}    "[..]));
        }
    }

    #[test]
    fn no_answer_says_why() {
        // Nothing listens.
        let free = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let e = join_status(free, Duration::from_secs(5)).unwrap_err();
        assert_eq!(e.step(), "refused", "{e}");
        // Closed before a whole answer.
        let (addr, t) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort");
        let e = join_status(addr, Duration::from_secs(5)).unwrap_err();
        t.join().unwrap();
        assert_eq!(e.step(), "closed", "{e}");
        // Not HTTP (a RakNet pong, say).
        let (addr, t) = serve_once(b"\x1c\x00\x00\x00\x00\x00\x00\x00\x01garbage\r\n\r\n");
        let e = join_status(addr, Duration::from_secs(5)).unwrap_err();
        t.join().unwrap();
        assert_eq!(e.step(), "not_http", "{e}");
        // Silent.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let e = join_status(l.local_addr().unwrap(), Duration::from_millis(200)).unwrap_err();
        assert_eq!(e.step(), "timeout", "{e}");
    }
}
