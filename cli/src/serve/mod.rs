//! `simdex serve`: one process owns a store and answers everyone over HTTP
//! (`format-spec/openapi.json`).
//!
//! A thread per connection, blocking I/O with deadlines: a client that sends slowly is cut
//! off at `--deadline` and holds only its own thread meanwhile. Before any work a request is
//! admitted: its token checked, then (a write) counted against `--max-pending-writes`, then
//! given one of `--max-requests` slots, waited for up to its deadline; past a limit it gets
//! 503 with `Retry-After` instead of a queue without bound. Writes are acknowledged once they
//! are as durable as `--sync` says; concurrent writers share one fsync (the store's group
//! commit). SIGTERM or SIGINT stops accepting, lets requests in flight finish, flushes and
//! closes the store.

mod admit;
mod api;
mod backend;
mod body;
mod conn;
mod documents_body;
mod http;
mod metrics;
mod tls;

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use clap::Args as ClapArgs;
use serde_json::{Value, json};
use simdex::{Error, Result, Store, StoreOptions, SyncPolicy};

use backend::{Backend, Follower};
use conn::{RateLimit, accept};
use http::{Limits, Response};
use metrics::Metrics;

/// Arguments of `simdex serve`.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The store (or document store) to serve; it must exist (`simdex insert` or `simdex
    /// ingest` create one).
    pub dir: PathBuf,
    /// Address to listen on (port 0: any free port; the log's "listening" line names it).
    #[arg(long, default_value = "127.0.0.1:7700")]
    pub listen: String,
    /// Serve a store another process writes: answer queries only, and open the store again
    /// whenever it has changed (checked every --refresh seconds).
    #[arg(long)]
    pub read_only: bool,
    /// Seconds between checks for a new generation or log records (with --read-only).
    #[arg(long, default_value_t = 1.0)]
    pub refresh: f64,
    /// A file whose first line is the bearer token every request must carry
    /// (`Authorization: Bearer …`); else the SIMDEX_TOKEN environment variable, if set.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// Log sync policy: per-write (a write is acknowledged once fsynced; concurrent writes
    /// share fsyncs), group:<ms>, or manual.
    #[arg(long, default_value = "per-write", value_parser = crate::store_cmd::parse_sync)]
    pub sync: SyncPolicy,
    /// Largest request body, in bytes (K, M, G suffixes).
    #[arg(long, default_value = "64M", value_parser = crate::util::parse_size)]
    pub max_body: u64,
    /// Open connections at most; more are answered 503 and closed.
    #[arg(long, default_value_t = 512)]
    pub max_connections: u64,
    /// Requests answered at once at most; others wait for a slot up to their deadline.
    #[arg(long, default_value_t = 64)]
    pub max_requests: u64,
    /// Writes admitted and not yet answered at most; more are answered 503 (the writer is
    /// behind) with Retry-After.
    #[arg(long, default_value_t = 256)]
    pub max_pending_writes: u64,
    /// Seconds a request may take to arrive, and again to wait for a slot and be answered
    /// (a batch query past it stops with 504).
    #[arg(long, default_value_t = 30.0)]
    pub deadline: f64,
    /// Seconds an idle keep-alive connection stays open.
    #[arg(long, default_value_t = 60.0)]
    pub idle_timeout: f64,
    /// A PEM certificate chain (leaf first): serve HTTPS (with --tls-key).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Log every request (by default only refusals, failures and the server's own events).
    #[arg(long)]
    pub access_log: bool,
}

/// Run `serve` until SIGTERM or SIGINT.
pub fn run(a: Args) -> Result<()> {
    let secs = |what: &str, v: f64| -> Result<Duration> {
        match v.is_finite() && v > 0.0 && v <= 86_400.0 {
            true => Ok(Duration::from_secs_f64(v)),
            false => Err(Error::InvalidArgument(format!(
                "--{what} {v}: give seconds, more than 0 and at most 86400"
            ))),
        }
    };
    let deadline = secs("deadline", a.deadline)?;
    let idle = secs("idle-timeout", a.idle_timeout)?;
    let refresh = secs("refresh", a.refresh)?;
    for (what, v) in [
        ("max-connections", a.max_connections),
        ("max-requests", a.max_requests),
        ("max-pending-writes", a.max_pending_writes),
        ("max-body", a.max_body),
    ] {
        if v == 0 || v > 1 << 40 {
            return Err(Error::InvalidArgument(format!(
                "--{what} {v}: give at least 1 (and at most 2^40)"
            )));
        }
    }
    let token = token(&a)?;
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(c), Some(k)) => Some(tls::config(c, k)?),
        _ => None,
    };
    if !Store::is_store(&a.dir) {
        return Err(Error::InvalidArgument(format!(
            "{} is not a store (no CURRENT file): create one with `simdex insert` or `simdex \
             ingest` first",
            a.dir.display()
        )));
    }
    let backend = match a.read_only {
        true => Backend::Reader(Follower::open(&a.dir, &StoreOptions::default())?),
        false => {
            let store = Arc::new(Store::open(
                &a.dir,
                &StoreOptions::default().with_sync(a.sync),
            )?);
            store.start_background_compaction();
            Backend::Writer(store)
        }
    };
    // Ready before it listens: an exact store's first document check would otherwise build
    // its prefix index (seconds per million documents) while clients wait.
    backend.warm()?;
    let listener = TcpListener::bind(&a.listen)
        .map_err(|e| Error::InvalidArgument(format!("cannot listen on {:?}: {e}", a.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io(None, "read the listening address", e))?;
    let app = Arc::new(App {
        backend,
        metrics: Metrics::default(),
        token,
        limits: Limits {
            head_bytes: 64 * 1024,
            body_bytes: usize::try_from(a.max_body).unwrap_or(usize::MAX),
            idle,
            receive: deadline,
        },
        deadline,
        max_pending_writes: a.max_pending_writes,
        slots: admit::Slots::new(a.max_requests),
        access_log: a.access_log,
        refusal_log: RateLimit::default(),
        tls,
    });
    crate::interrupt::install();
    log(
        "info",
        "listening",
        &[
            ("addr", json!(addr.to_string())),
            ("store", json!(a.dir.display().to_string())),
            (
                "mode",
                json!(if a.read_only {
                    "read-only"
                } else {
                    "read-write"
                }),
            ),
        ],
    );
    std::thread::scope(|sc| -> Result<()> {
        if let Backend::Reader(f) = &app.backend {
            sc.spawn(|| {
                f.follow(refresh, &stopping, &|m| log("warn", &m, &[]));
            });
        }
        accept(&app, &listener, a.max_connections);
        // Requests in flight finish (connections close after their answer); idle ones see
        // the stop within 200 ms.
        let until = Instant::now() + deadline + Duration::from_secs(1);
        while app.metrics.connections.load(Relaxed) > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    })?;
    let app = Arc::into_inner(app);
    if let Some(App {
        backend: Backend::Writer(store),
        ..
    }) = app
    {
        store.flush()?;
        // The compactor holds the store only while it compacts: wait for it to let go.
        let mut store = store;
        for _ in 0..600 {
            match Arc::try_unwrap(store) {
                Ok(s) => {
                    s.close()?;
                    break;
                }
                Err(s) => {
                    store = s;
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }
    log("info", "stopped", &[]);
    Ok(())
}

fn stopping() -> bool {
    crate::interrupt::signalled().is_some()
}

/// The token from --token-file or SIMDEX_TOKEN.
fn token(a: &Args) -> Result<Option<String>> {
    let t = match &a.token_file {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| Error::io(Some(p.clone()), "read the token file", e))?;
            Some(text.lines().next().unwrap_or("").trim().to_string())
        }
        None => std::env::var("SIMDEX_TOKEN").ok(),
    };
    match t {
        Some(t) if t.is_empty() => Err(Error::InvalidArgument(
            "the bearer token is empty (--token-file's first line, or SIMDEX_TOKEN)".into(),
        )),
        Some(t) if !t.bytes().all(|b| b.is_ascii_graphic()) => Err(Error::InvalidArgument(
            "the bearer token has spaces or non-ASCII characters".into(),
        )),
        t => Ok(t),
    }
}

/// What every connection shares.
struct App {
    backend: Backend,
    metrics: Metrics,
    token: Option<String>,
    limits: Limits,
    deadline: Duration,
    max_pending_writes: u64,
    slots: admit::Slots,
    access_log: bool,
    refusal_log: RateLimit,
    /// Serve HTTPS with this configuration.
    tls: Option<Arc<rustls::ServerConfig>>,
}

fn health(app: &App) -> Response {
    let status = if stopping() { "stopping" } else { "ok" };
    let v = json!({
        "status": status,
        "mode": if app.backend.writer().is_some() { "read-write" } else { "read-only" },
        "generation": app.backend.stats().generation,
    });
    let r = body::json(v);
    match stopping() {
        true => Response { status: 503, ..r },
        false => r,
    }
}

fn metrics_text(app: &App) -> Response {
    let s = app.backend.stats();
    let c = app.backend.counters();
    let gauges = [
        (
            "simdex_store_generation",
            "The live generation's number.",
            s.generation as f64,
        ),
        (
            "simdex_store_fingerprints",
            "Distinct fingerprints in the generation.",
            s.fingerprints as f64,
        ),
        (
            "simdex_store_pairs",
            "Pairs in the generation.",
            s.pairs as f64,
        ),
        (
            "simdex_store_delta_pairs",
            "Pairs logged since the generation.",
            s.delta_pairs as f64,
        ),
        (
            "simdex_store_documents",
            "Documents in the generation.",
            s.documents as f64,
        ),
        (
            "simdex_store_table_bytes",
            "Bytes of the generation's tables.",
            s.table_bytes as f64,
        ),
        (
            "simdex_store_log_bytes",
            "Bytes of the write-ahead logs.",
            s.log_bytes as f64,
        ),
        (
            "simdex_store_sets_bytes",
            "Bytes of the shingle sets.",
            s.sets_bytes as f64,
        ),
        (
            "simdex_compactions_total",
            "Compactions since the server started.",
            c.compactions as f64,
        ),
        (
            "simdex_compaction_seconds_total",
            "Time spent compacting.",
            c.compaction_time.as_secs_f64(),
        ),
        (
            "simdex_fsyncs_total",
            "fsyncs of the log since the server started.",
            c.fsyncs as f64,
        ),
        (
            "simdex_fsync_seconds_total",
            "Time spent in those fsyncs.",
            c.fsync_time.as_secs_f64(),
        ),
    ];
    let text = app.metrics.render(&gauges);
    Response::new(200, "text/plain; version=0.0.4", text.into_bytes())
}

/// One structured log line on stderr: a JSON object with the time, level and message.
fn log(level: &str, msg: &str, fields: &[(&str, Value)]) {
    let ts = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let mut m = serde_json::Map::new();
    m.insert("ts".into(), json!((ts * 1000.0).round() / 1000.0));
    m.insert("level".into(), json!(level));
    m.insert("msg".into(), json!(msg));
    for (k, v) in fields {
        m.insert((*k).to_string(), v.clone());
    }
    let line = Value::Object(m).to_string();
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
