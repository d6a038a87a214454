//! HTTP/1.1 on a blocking stream: one request read within its limits (head size, body size,
//! deadlines, `Expect: 100-continue`, chunked bodies, pipelined requests kept for the next
//! read), and one response written. Keep-alive follows HTTP/1.1's rules.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// What one connection may send.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of a request line and its headers.
    pub head_bytes: usize,
    /// Bytes of a body (after chunked decoding).
    pub body_bytes: usize,
    /// How long a connection may sit between requests.
    pub idle: Duration,
    /// How long a request may take to arrive once its first byte has (head and body): a slow
    /// client is cut off, not waited for.
    pub receive: Duration,
}

/// A request.
#[derive(Debug)]
pub struct Request {
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string, without `?` (empty if none).
    pub query: String,
    headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The client keeps the connection open after the response.
    pub keep_alive: bool,
}

impl Request {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The media type of the body, lowercased, without parameters ("" if none).
    pub fn content_type(&self) -> String {
        self.header("content-type")
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase())
            .unwrap_or_default()
    }

    /// The value of query parameter `name`, percent-decoded.
    pub fn param(&self, name: &str) -> Option<String> {
        self.query.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k == name).then(|| percent_decode(v))
        })
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => match b.get(i + 1..i + 3) {
                Some(h) if h.iter().all(u8::is_ascii_hexdigit) => {
                    let hex = std::str::from_utf8(h).unwrap_or("0");
                    out.push(u8::from_str_radix(hex, 16).unwrap_or(0));
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Why no request was read.
#[derive(Debug)]
pub enum ReadError {
    /// The client closed the connection (or sat idle past its limit, or the server is
    /// stopping) between requests: nothing to answer.
    Closed,
    /// The request did not arrive in time: 408.
    Timeout,
    /// A head or body over its limit: 431 or 413 (what, limit).
    TooLarge {
        status: u16,
        what: &'static str,
        limit: usize,
    },
    /// Not HTTP/1.x as this server reads it: 400 (or 411, 501) with the reason.
    Malformed { status: u16, reason: String },
    /// The connection failed.
    Io,
}

/// Reads requests from one connection, keeping bytes that arrived beyond a request (a
/// pipelined next one).
pub struct Reader {
    buf: Vec<u8>,
}

impl Reader {
    pub fn new() -> Reader {
        Reader { buf: Vec::new() }
    }

    /// The next request. `stopping` is polled while the connection is idle: when it returns
    /// true and no byte of a request has arrived, the connection closes.
    pub fn read<S: Read + Write>(
        &mut self,
        s: &mut S,
        set_timeout: &dyn Fn(&mut S, Duration) -> std::io::Result<()>,
        limits: &Limits,
        stopping: &dyn Fn() -> bool,
    ) -> Result<Request, ReadError> {
        // Idle until the first byte, in short waits so that a stop is seen.
        let idle_until = Instant::now() + limits.idle;
        while self.buf.is_empty() {
            if stopping() {
                return Err(ReadError::Closed);
            }
            let now = Instant::now();
            if now >= idle_until {
                return Err(ReadError::Closed);
            }
            let wait = (idle_until - now).min(Duration::from_millis(200));
            match self.fill(s, set_timeout, wait) {
                Ok(0) => return Err(ReadError::Closed),
                Ok(_) => {}
                Err(e) if is_timeout(&e) => {}
                Err(_) => return Err(ReadError::Closed),
            }
        }
        let deadline = Instant::now() + limits.receive;
        // The head.
        let (head_len, mut req, body_len) = loop {
            if let Some(parsed) = parse_head(&self.buf, limits)? {
                break parsed;
            }
            if self.buf.len() > limits.head_bytes {
                return Err(ReadError::TooLarge {
                    status: 431,
                    what: "request head",
                    limit: limits.head_bytes,
                });
            }
            self.fill_by(s, set_timeout, deadline)?;
        };
        self.buf.drain(..head_len);
        if let Body::Length(n) = body_len
            && n > limits.body_bytes as u64
        {
            return Err(ReadError::TooLarge {
                status: 413,
                what: "body",
                limit: limits.body_bytes,
            });
        }
        if req
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
            && body_len != Body::Length(0)
            && self.buf.is_empty()
        {
            let _ = s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        req.body = match body_len {
            Body::Length(n) => {
                let n = n as usize;
                while self.buf.len() < n {
                    self.fill_by(s, set_timeout, deadline)?;
                }
                self.buf.drain(..n).collect()
            }
            Body::Chunked => self.read_chunked(s, set_timeout, deadline, limits)?,
        };
        Ok(req)
    }

    fn read_chunked<S: Read + Write>(
        &mut self,
        s: &mut S,
        set_timeout: &dyn Fn(&mut S, Duration) -> std::io::Result<()>,
        deadline: Instant,
        limits: &Limits,
    ) -> Result<Vec<u8>, ReadError> {
        let bad = |reason: &str| ReadError::Malformed {
            status: 400,
            reason: format!("chunked body: {reason}"),
        };
        let mut body = Vec::new();
        loop {
            let line = self.line(s, set_timeout, deadline)?;
            let size = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size, 16).map_err(|_| bad("bad chunk size"))?;
            if body.len().saturating_add(size) > limits.body_bytes {
                return Err(ReadError::TooLarge {
                    status: 413,
                    what: "body",
                    limit: limits.body_bytes,
                });
            }
            if size == 0 {
                // Trailers, up to the empty line.
                while !self.line(s, set_timeout, deadline)?.is_empty() {}
                return Ok(body);
            }
            while self.buf.len() < size + 2 {
                self.fill_by(s, set_timeout, deadline)?;
            }
            if &self.buf[size..size + 2] != b"\r\n" {
                return Err(bad("chunk not followed by CRLF"));
            }
            body.extend_from_slice(&self.buf[..size]);
            self.buf.drain(..size + 2);
        }
    }

    /// One CRLF-terminated line (without it).
    fn line<S: Read + Write>(
        &mut self,
        s: &mut S,
        set_timeout: &dyn Fn(&mut S, Duration) -> std::io::Result<()>,
        deadline: Instant,
    ) -> Result<String, ReadError> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                self.buf.drain(..i + 2);
                return Ok(line);
            }
            if self.buf.len() > 4096 {
                return Err(ReadError::Malformed {
                    status: 400,
                    reason: "chunked body: a chunk line over 4096 bytes".into(),
                });
            }
            self.fill_by(s, set_timeout, deadline)?;
        }
    }

    /// Read more before `deadline`, or fail.
    fn fill_by<S: Read + Write>(
        &mut self,
        s: &mut S,
        set_timeout: &dyn Fn(&mut S, Duration) -> std::io::Result<()>,
        deadline: Instant,
    ) -> Result<(), ReadError> {
        let now = Instant::now();
        if now >= deadline {
            return Err(ReadError::Timeout);
        }
        match self.fill(s, set_timeout, deadline - now) {
            Ok(0) => Err(ReadError::Malformed {
                status: 400,
                reason: "the connection closed before the request ended".into(),
            }),
            Ok(_) => Ok(()),
            Err(e) if is_timeout(&e) => Err(ReadError::Timeout),
            Err(_) => Err(ReadError::Io),
        }
    }

    fn fill<S: Read + Write>(
        &mut self,
        s: &mut S,
        set_timeout: &dyn Fn(&mut S, Duration) -> std::io::Result<()>,
        wait: Duration,
    ) -> std::io::Result<usize> {
        set_timeout(s, wait.max(Duration::from_millis(1)))?;
        let mut chunk = [0u8; 64 * 1024];
        let n = s.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Length(u64),
    Chunked,
}

/// The head at the start of `buf`, if it is complete: (its length, the request without its
/// body, how the body is framed).
fn parse_head(buf: &[u8], limits: &Limits) -> Result<Option<(usize, Request, Body)>, ReadError> {
    let malformed = |status: u16, reason: String| ReadError::Malformed { status, reason };
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Request::new(&mut headers);
    let len = match r.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(ReadError::TooLarge {
                status: 431,
                what: "header count",
                limit: 64,
            });
        }
        Err(e) => return Err(malformed(400, format!("bad request head: {e}"))),
    };
    if len > limits.head_bytes {
        return Err(ReadError::TooLarge {
            status: 431,
            what: "request head",
            limit: limits.head_bytes,
        });
    }
    let version = r.version.unwrap_or(1);
    let target = r.path.unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut req = Request {
        method: r.method.unwrap_or("").to_string(),
        path: path.to_string(),
        query: query.to_string(),
        headers: Vec::with_capacity(r.headers.len()),
        body: Vec::new(),
        keep_alive: version == 1,
    };
    let mut body = Body::Length(0);
    let mut lengths = 0;
    for h in r.headers.iter() {
        let value = std::str::from_utf8(h.value)
            .map_err(|_| malformed(400, format!("header {} is not UTF-8", h.name)))?
            .trim()
            .to_string();
        if h.name.eq_ignore_ascii_case("content-length") {
            lengths += 1;
            let n = value
                .parse::<u64>()
                .map_err(|_| malformed(400, format!("Content-Length {value:?} is not a number")))?;
            if body == Body::Chunked {
                return Err(malformed(
                    400,
                    "both Content-Length and Transfer-Encoding".into(),
                ));
            }
            body = Body::Length(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            if !value.eq_ignore_ascii_case("chunked") {
                return Err(malformed(
                    501,
                    format!("Transfer-Encoding {value:?} (only chunked is read)"),
                ));
            }
            if lengths > 0 {
                return Err(malformed(
                    400,
                    "both Content-Length and Transfer-Encoding".into(),
                ));
            }
            body = Body::Chunked;
        } else if h.name.eq_ignore_ascii_case("connection") {
            let v = value.to_ascii_lowercase();
            if v.split(',').any(|t| t.trim() == "close") {
                req.keep_alive = false;
            } else if v.split(',').any(|t| t.trim() == "keep-alive") {
                req.keep_alive = true;
            }
        }
        req.headers.push((h.name.to_string(), value));
    }
    if lengths > 1 {
        return Err(malformed(400, "more than one Content-Length".into()));
    }
    Ok(Some((len, req, body)))
}

/// A response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// Extra headers (name, value).
    pub headers: Vec<(&'static str, String)>,
}

impl Response {
    /// A response of `status` with a body of `content_type`.
    pub fn new(status: u16, content_type: &'static str, body: Vec<u8>) -> Response {
        Response {
            status,
            content_type,
            body,
            headers: Vec::new(),
        }
    }

    /// Add a header.
    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }

    /// Write it; `keep_alive` false adds `Connection: close`.
    pub fn write_to(&self, w: &mut impl Write, keep_alive: bool) -> std::io::Result<()> {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        for (n, v) in &self.headers {
            head += &format!("{n}: {v}\r\n");
        }
        if !keep_alive {
            head += "Connection: close\r\n";
        }
        head += "\r\n";
        // One write for a small response (a second segment would wait for the client's ACK).
        if self.body.len() <= 16 * 1024 {
            let mut all = head.into_bytes();
            all.extend_from_slice(&self.body);
            w.write_all(&all)?;
        } else {
            w.write_all(head.as_bytes())?;
            w.write_all(&self.body)?;
        }
        w.flush()
    }
}

/// The reason phrase of the statuses this server sends.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Content",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        507 => "Insufficient Storage",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream that yields its input in the given pieces and records what is written.
    struct Pieces {
        pieces: Vec<Vec<u8>>,
        out: Vec<u8>,
    }

    impl Read for Pieces {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.pieces.is_empty() {
                return Err(std::io::ErrorKind::WouldBlock.into());
            }
            let p = self.pieces.remove(0);
            buf[..p.len()].copy_from_slice(&p);
            Ok(p.len())
        }
    }

    impl Write for Pieces {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.out.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn limits() -> Limits {
        Limits {
            head_bytes: 1024,
            body_bytes: 64,
            idle: Duration::from_millis(50),
            receive: Duration::from_millis(50),
        }
    }

    fn read_all(pieces: &[&[u8]]) -> (Vec<Result<Request, ReadError>>, Vec<u8>) {
        let mut s = Pieces {
            pieces: pieces.iter().map(|p| p.to_vec()).collect(),
            out: Vec::new(),
        };
        let mut r = Reader::new();
        let mut got = Vec::new();
        loop {
            let x = r.read(&mut s, &|_, _| Ok(()), &limits(), &|| false);
            let stop = x.is_err();
            got.push(x);
            if stop {
                break;
            }
        }
        (got, s.out)
    }

    /// Requests split anywhere, pipelined, chunked and with 100-continue all read the same.
    #[test]
    fn reads_split_pipelined_and_chunked_requests() {
        let (got, out) = read_all(&[
            b"POST /v1/a?x=1%202&y HTTP/1.1\r\nContent-Le",
            b"ngth: 3\r\nExpect: 100-continue\r\n\r\n",
            b"abcGET /b HTTP/1.1\r\nConnection: close\r\n\r\nPOST /c HTTP/1.1\r\n",
            b"Transfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n1;x=y\r\n!\r\n0\r\n\r\n",
        ]);
        let ok: Vec<&Request> = got.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(ok.len(), 3, "{got:?}");
        assert_eq!(ok[0].body, b"abc");
        assert_eq!(ok[0].param("x").as_deref(), Some("1 2"));
        assert_eq!(ok[0].param("y").as_deref(), Some(""));
        assert!(ok[0].keep_alive);
        assert_eq!(ok[1].path, "/b");
        assert!(!ok[1].keep_alive);
        assert_eq!(ok[2].body, b"hi!");
        assert!(String::from_utf8_lossy(&out).contains("100 Continue"));
        assert!(matches!(got.last(), Some(Err(ReadError::Closed))));
    }

    /// Oversized, malformed and stalled requests get the right error.
    #[test]
    fn refuses_what_is_too_large_malformed_or_slow() {
        let cases: [(&[&[u8]], u16); 8] = [
            (&[b"POST / HTTP/1.1\r\nContent-Length: 65\r\n\r\n"], 413),
            (
                &[b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n41\r\n"],
                413,
            ),
            (&[&[b'a'; 2000]], 431),
            (&[b"G\x01T / HTTP/1.1\r\n\r\n"], 400),
            (&[b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n"], 400),
            (&[b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"], 501),
            (&[b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nabc"], 408),
            (&[b"GET / HTTP/1.1\r\nHost: x\r\n"], 408),
        ];
        for (pieces, want) in cases {
            let (got, _) = read_all(pieces);
            let status = match got.last() {
                Some(Err(ReadError::TooLarge { status, .. })) => *status,
                Some(Err(ReadError::Malformed { status, .. })) => *status,
                Some(Err(ReadError::Timeout)) => 408,
                other => panic!("{pieces:?}: {other:?}"),
            };
            assert_eq!(status, want, "{:?}", String::from_utf8_lossy(pieces[0]));
        }
        let mut head = b"GET / HTTP/1.1\r\n".to_vec();
        head.extend(std::iter::repeat_n(b"X-A: b\r\n".as_slice(), 200).flatten());
        let (got, _) = read_all(&[&head]);
        assert!(matches!(
            got.last(),
            Some(Err(ReadError::TooLarge { status: 431, .. }))
        ));
    }
}
