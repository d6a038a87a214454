//! Admission: before any work a request's token is checked, then (a write) it is counted
//! against `--max-pending-writes`, then it waits for one of `--max-requests` slots up to its
//! deadline. Past a limit it is answered 503 with `Retry-After`, never queued without bound.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use simdex::{Progress, ProgressHandle};

use super::body::ApiError;
use super::http::{Request, Response};
use super::metrics::Op;
use super::{App, api, health, metrics_text};

/// Admit and answer one request: (its operation, the response).
pub(super) fn dispatch(app: &App, req: &Request, started: Instant) -> (Op, Response) {
    let Some((op, methods)) = api::route(&req.path) else {
        let e = ApiError::new(
            404,
            "not_found",
            format!(
                "no operation at {} (see format-spec/openapi.json)",
                req.path
            ),
        );
        return (Op::Other, e.response());
    };
    if let Some(t) = &app.token
        && !authorized(req, t)
    {
        app.metrics.refused_unauthorized.fetch_add(1, Relaxed);
        let e = ApiError::new(
            401,
            "unauthorized",
            "this server needs Authorization: Bearer <token>",
        );
        return (op, e.response().with("WWW-Authenticate", "Bearer"));
    }
    if !methods.contains(&req.method.as_str()) {
        let e = ApiError::new(
            405,
            "method_not_allowed",
            format!(
                "{} takes {}, not {}",
                req.path,
                methods.join(" or "),
                req.method
            ),
        );
        return (op, e.response().with("Allow", methods.join(", ")));
    }
    let r = match op {
        Op::Health => Ok(health(app)),
        Op::Metrics => Ok(metrics_text(app)),
        _ => admitted(app, op, req, started),
    };
    (op, r.unwrap_or_else(|e| e.response()))
}

/// Constant-time comparison of the request's bearer token with `want`.
fn authorized(req: &Request, want: &str) -> bool {
    let Some(got) = req.header("authorization").and_then(|h| {
        h.strip_prefix("Bearer ")
            .or_else(|| h.strip_prefix("bearer "))
    }) else {
        return false;
    };
    let (a, b) = (got.trim().as_bytes(), want.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Count a write, take a slot, answer.
fn admitted(app: &App, op: Op, req: &Request, started: Instant) -> Result<Response, ApiError> {
    let m = &app.metrics;
    let _write = match op.writes() {
        true => {
            let w = Counted::new(&m.writes);
            if w.0 > app.max_pending_writes {
                m.refused_overloaded.fetch_add(1, Relaxed);
                return Err(ApiError::overloaded(format!(
                    "{} writes are pending (--max-pending-writes): the writer is behind, retry \
                     later",
                    app.max_pending_writes
                )));
            }
            Some(w)
        }
        false => None,
    };
    let until = started + app.deadline;
    let _slot = {
        let _queued = Counted::new(&m.queued);
        app.slots.take(until).ok_or_else(|| {
            m.refused_overloaded.fetch_add(1, Relaxed);
            ApiError::overloaded(format!(
                "no free slot within the deadline of {:?} (--max-requests): retry later",
                app.deadline
            ))
        })?
    };
    let _in_flight = Counted::new(&m.in_flight);
    let cancel = ProgressHandle::new(Deadline(until));
    api::answer(op, &app.backend, req, &cancel)
}

/// Cancels a long query once its deadline has passed.
struct Deadline(Instant);

impl Progress for Deadline {
    fn cancelled(&self) -> bool {
        Instant::now() >= self.0
    }
}

/// An atomic count held up while this lives: (the count with it).
struct Counted<'a>(u64, &'a AtomicU64);

impl<'a> Counted<'a> {
    fn new(c: &'a AtomicU64) -> Counted<'a> {
        Counted(c.fetch_add(1, Relaxed) + 1, c)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.1.fetch_sub(1, Relaxed);
    }
}

/// A counting semaphore with a deadline.
pub(super) struct Slots {
    free: Mutex<u64>,
    cv: Condvar,
}

/// A slot, given back when dropped.
struct Slot<'a>(&'a Slots);

impl Slots {
    pub(super) fn new(n: u64) -> Slots {
        Slots {
            free: Mutex::new(n),
            cv: Condvar::new(),
        }
    }

    fn take(&self, until: Instant) -> Option<Slot<'_>> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            let now = Instant::now();
            if now >= until {
                return None;
            }
            free = self
                .cv
                .wait_timeout(free, until - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *free -= 1;
        Some(Slot(self))
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.cv.notify_one();
    }
}
