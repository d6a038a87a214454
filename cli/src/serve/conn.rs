//! Connections: the accept loop (refusing past `--max-connections`), the threads that answer
//! them (kept for the next connection), and one connection's loop of requests read, admitted,
//! answered and logged.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::body::ApiError;
use super::http::{ReadError, Reader};
use super::metrics::Op;
use super::{App, admit, log, stopping};

/// Accept until stopped, a thread per connection.
pub(super) fn accept(app: &Arc<App>, listener: &TcpListener, max_connections: u64) {
    use std::os::fd::AsRawFd;
    let workers = Arc::new(Workers::default());
    while !stopping() {
        let mut pfd = libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut pfd, 1, 200) };
        if ready <= 0 {
            continue;
        }
        let Ok((mut stream, _)) = listener.accept() else {
            continue;
        };
        let m = &app.metrics;
        if m.connections.load(Relaxed) >= max_connections {
            m.refused_connections.fetch_add(1, Relaxed);
            let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
            let e = ApiError::overloaded(format!(
                "{max_connections} connections are open (--max-connections): retry later"
            ));
            if e.response().write_to(&mut stream, false).is_ok() {
                // What the client sent so far is read (without waiting for more): closing
                // with it unread would reset the connection, and the answer with it.
                let _ = stream.shutdown(std::net::Shutdown::Write);
                let _ = stream.set_nonblocking(true);
                let _ = stream.read(&mut [0u8; 16 * 1024]);
            }
            continue;
        }
        m.connections.fetch_add(1, Relaxed);
        let Some(stream) = workers.hand_over(stream) else {
            continue;
        };
        let (app2, workers2) = (Arc::clone(app), Arc::clone(&workers));
        let spawned = std::thread::Builder::new()
            .name("simdex-conn".into())
            .stack_size(512 * 1024)
            .spawn(move || workers2.work(&app2, stream));
        if spawned.is_err() {
            m.connections.fetch_sub(1, Relaxed);
            m.refused_connections.fetch_add(1, Relaxed);
        }
    }
}

/// Connection threads kept for the next connection (a flood of short connections would
/// otherwise start a thread each): an accepted connection goes to an idle one if there is
/// one, else to a new thread. A thread idle for 10 s ends.
#[derive(Default)]
struct Workers {
    /// Connections handed over and not yet taken, and the threads waiting for one.
    queue: Mutex<(VecDeque<TcpStream>, usize)>,
    cv: Condvar,
}

impl Workers {
    /// Give `s` to an idle thread; back if there is none.
    fn hand_over(&self, s: TcpStream) -> Option<TcpStream> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if q.1 > q.0.len() {
            q.0.push_back(s);
            self.cv.notify_one();
            return None;
        }
        Some(s)
    }

    /// Answer `first`, then every connection handed over, until idle for 10 s or stopped.
    fn work(&self, app: &App, first: TcpStream) {
        let mut next = Some(first);
        while let Some(s) = next.take() {
            let _ = s.set_nodelay(true);
            let _ = s.set_write_timeout(Some(app.deadline));
            match &app.tls {
                None => connection(app, s, |s| s),
                // The handshake happens in the first read, under the idle limit.
                Some(cfg) => {
                    if let Ok(c) = rustls::ServerConnection::new(Arc::clone(cfg)) {
                        connection(app, rustls::StreamOwned::new(c, s), |s| &s.sock);
                    }
                }
            }
            app.metrics.connections.fetch_sub(1, Relaxed);
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            q.1 += 1;
            let until = Instant::now() + Duration::from_secs(10);
            loop {
                if let Some(s) = q.0.pop_front() {
                    next = Some(s);
                    break;
                }
                let now = Instant::now();
                if now >= until || stopping() {
                    break;
                }
                let wait = (until - now).min(Duration::from_millis(200));
                q = self
                    .cv
                    .wait_timeout(q, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            q.1 -= 1;
        }
    }
}

/// Answer one connection's requests until it closes, fails or the server stops.
fn connection<S: Read + Write>(app: &App, mut stream: S, sock: fn(&S) -> &TcpStream) {
    let set_timeout =
        |s: &mut S, d: Duration| -> std::io::Result<()> { sock(s).set_read_timeout(Some(d)) };
    let mut reader = Reader::new();
    loop {
        let got = reader.read(&mut stream, &set_timeout, &app.limits, &stopping);
        let started = Instant::now();
        let (op, response, keep) = match got {
            Err(ReadError::Closed) | Err(ReadError::Io) => return,
            Err(e) => {
                let err = refusal(app, e);
                (Op::Other, err.response(), false)
            }
            Ok(req) => {
                let (op, response) = admit::dispatch(app, &req, started);
                (op, response, req.keep_alive && !stopping())
            }
        };
        let ok = response.write_to(&mut stream, keep).is_ok();
        let took = started.elapsed();
        app.metrics.record(op, response.status, took);
        let logged = match response.status {
            500.. => Some(0),
            400..500 => app.refusal_log.admit(),
            _ => app.access_log.then_some(0),
        };
        if let Some(suppressed) = logged {
            let level = if response.status >= 500 {
                "error"
            } else {
                "info"
            };
            let mut fields = vec![
                ("op", json!(op.name())),
                ("status", json!(response.status)),
                (
                    "ms",
                    json!((took.as_secs_f64() * 1e3 * 1000.0).round() / 1000.0),
                ),
                ("bytes", json!(response.body.len())),
            ];
            if response.status >= 400 {
                let msg = serde_json::from_slice::<Value>(&response.body)
                    .ok()
                    .and_then(|v| v["error"]["message"].as_str().map(str::to_string));
                fields.push(("error", json!(msg)));
            }
            if suppressed > 0 {
                fields.push(("refusals_not_logged", json!(suppressed)));
            }
            log(level, "request", &fields);
        }
        if !ok || !keep {
            if ok {
                linger(&mut stream, sock);
            }
            return;
        }
    }
}

/// Close after an answer: stop writing, then read and drop what the client still sends (a
/// body refused unread, a pipelined request) for up to a second, so that the close does not
/// reset the connection before the client has read the answer.
fn linger<S: Read + Write>(stream: &mut S, sock: fn(&S) -> &TcpStream) {
    let _ = stream.flush();
    let _ = sock(stream).shutdown(std::net::Shutdown::Write);
    let until = Instant::now() + Duration::from_secs(1);
    let mut buf = [0u8; 16 * 1024];
    let mut left = 1usize << 20;
    while left > 0 && Instant::now() < until {
        let _ = sock(stream).set_read_timeout(Some(Duration::from_millis(100)));
        match sock(stream).read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

/// The error for a request that could not be read.
fn refusal(app: &App, e: ReadError) -> ApiError {
    let m = &app.metrics;
    match e {
        ReadError::Timeout => {
            m.refused_timeout.fetch_add(1, Relaxed);
            ApiError::new(
                408,
                "request_timeout",
                format!(
                    "the request did not arrive within {:?} (--deadline)",
                    app.limits.receive
                ),
            )
        }
        ReadError::TooLarge {
            status,
            what,
            limit,
        } => {
            m.refused_too_large.fetch_add(1, Relaxed);
            let hint = if what == "body" { " (--max-body)" } else { "" };
            ApiError::new(
                status,
                "too_large",
                format!("the {what} is over its limit of {limit}{hint}"),
            )
        }
        ReadError::Malformed { status, reason } => {
            m.refused_malformed.fetch_add(1, Relaxed);
            ApiError::new(status, "malformed_request", reason)
        }
        ReadError::Closed | ReadError::Io => ApiError::new(400, "malformed_request", "closed"),
    }
}

/// At most [`RateLimit::PER_SECOND`] refusal lines a second: a flood of bad requests must not
/// turn into a flood of log lines (the metrics count every one).
#[derive(Default)]
pub(super) struct RateLimit {
    /// (the second counted, lines in it, lines left out since the last one written).
    state: Mutex<(u64, u64, u64)>,
}

impl RateLimit {
    const PER_SECOND: u64 = 20;

    /// Whether to log one more: Some(lines left out before it), or None.
    pub(super) fn admit(&self) -> Option<u64> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.0 != now {
            s.0 = now;
            s.1 = 0;
        }
        if s.1 >= Self::PER_SECOND {
            s.2 += 1;
            return None;
        }
        s.1 += 1;
        Some(std::mem::take(&mut s.2))
    }
}
