//! The server's counters, gauges and latency histograms, in Prometheus' text format at
//! `/metrics`. Lock-free: every request updates a few atomics.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// The operations requests are counted and timed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Health,
    Metrics,
    Stats,
    Near,
    NearMany,
    IdsOf,
    Insert,
    Delete,
    Ingest,
    Check,
    Expire,
    Flush,
    Compact,
    /// Anything else (unknown paths, refused requests).
    Other,
}

const OPS: [Op; 14] = [
    Op::Health,
    Op::Metrics,
    Op::Stats,
    Op::Near,
    Op::NearMany,
    Op::IdsOf,
    Op::Insert,
    Op::Delete,
    Op::Ingest,
    Op::Check,
    Op::Expire,
    Op::Flush,
    Op::Compact,
    Op::Other,
];

impl Op {
    /// The label value.
    pub fn name(self) -> &'static str {
        match self {
            Op::Health => "health",
            Op::Metrics => "metrics",
            Op::Stats => "stats",
            Op::Near => "near",
            Op::NearMany => "near_many",
            Op::IdsOf => "ids_of",
            Op::Insert => "insert",
            Op::Delete => "delete",
            Op::Ingest => "ingest",
            Op::Check => "check",
            Op::Expire => "expire",
            Op::Flush => "flush",
            Op::Compact => "compact",
            Op::Other => "other",
        }
    }

    /// Whether the operation writes (and so waits for the writer).
    pub fn writes(self) -> bool {
        matches!(
            self,
            Op::Insert | Op::Delete | Op::Ingest | Op::Expire | Op::Flush | Op::Compact
        )
    }

    fn index(self) -> usize {
        OPS.iter().position(|&o| o == self).unwrap_or(OPS.len() - 1)
    }
}

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0,
];

/// The status classes counted per operation.
const CLASSES: [&str; 4] = ["2xx", "4xx", "5xx", "other"];

#[derive(Default)]
struct PerOp {
    /// Requests by status class.
    by_class: [AtomicU64; 4],
    /// Cumulative-at-render bucket counts (one more for +Inf).
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

/// See the module docs.
#[derive(Default)]
pub struct Metrics {
    ops: [PerOp; OPS.len()],
    /// Open connections; requests being answered; requests waiting for a slot; writes
    /// admitted and not yet answered.
    pub connections: AtomicU64,
    pub in_flight: AtomicU64,
    pub queued: AtomicU64,
    pub writes: AtomicU64,
    /// Requests refused before any work: over a limit, overloaded, unauthorized.
    pub refused_overloaded: AtomicU64,
    pub refused_too_large: AtomicU64,
    pub refused_timeout: AtomicU64,
    pub refused_unauthorized: AtomicU64,
    pub refused_malformed: AtomicU64,
    pub refused_connections: AtomicU64,
}

impl Metrics {
    /// Count one request of `op` answered with `status` after `took`.
    pub fn record(&self, op: Op, status: u16, took: Duration) {
        let m = &self.ops[op.index()];
        let class = match status {
            200..=299 => 0,
            400..=499 => 1,
            500..=599 => 2,
            _ => 3,
        };
        m.by_class[class].fetch_add(1, Relaxed);
        let s = took.as_secs_f64();
        let b = BUCKETS
            .iter()
            .position(|&le| s <= le)
            .unwrap_or(BUCKETS.len());
        m.buckets[b].fetch_add(1, Relaxed);
        m.sum_nanos
            .fetch_add(took.as_nanos().min(u64::MAX as u128) as u64, Relaxed);
    }

    /// The text format, with the store's gauges from `store`.
    pub fn render(&self, store: &[(&str, &str, f64)]) -> String {
        let mut s = String::new();
        s += "# HELP simdex_requests_total Requests answered, by operation and status class.\n";
        s += "# TYPE simdex_requests_total counter\n";
        for op in OPS {
            let m = &self.ops[op.index()];
            for (i, c) in CLASSES.iter().enumerate() {
                let n = m.by_class[i].load(Relaxed);
                if n > 0 {
                    let _ = writeln!(
                        s,
                        "simdex_requests_total{{op=\"{}\",status=\"{c}\"}} {n}",
                        op.name()
                    );
                }
            }
        }
        s += "# HELP simdex_request_duration_seconds Time from a request's arrival to its \
              answer, by operation.\n";
        s += "# TYPE simdex_request_duration_seconds histogram\n";
        for op in OPS {
            let m = &self.ops[op.index()];
            let mut total = 0;
            for (i, le) in BUCKETS.iter().enumerate() {
                total += m.buckets[i].load(Relaxed);
                let _ = writeln!(
                    s,
                    "simdex_request_duration_seconds_bucket{{op=\"{}\",le=\"{le}\"}} {total}",
                    op.name()
                );
            }
            total += m.buckets[BUCKETS.len()].load(Relaxed);
            let name = op.name();
            let _ = writeln!(
                s,
                "simdex_request_duration_seconds_bucket{{op=\"{name}\",le=\"+Inf\"}} {total}"
            );
            let sum = m.sum_nanos.load(Relaxed) as f64 / 1e9;
            let _ = writeln!(
                s,
                "simdex_request_duration_seconds_sum{{op=\"{name}\"}} {sum}"
            );
            let _ = writeln!(
                s,
                "simdex_request_duration_seconds_count{{op=\"{name}\"}} {total}"
            );
        }
        let gauges = [
            (
                "simdex_connections",
                "Open client connections.",
                &self.connections,
            ),
            (
                "simdex_requests_in_flight",
                "Requests being answered.",
                &self.in_flight,
            ),
            (
                "simdex_queue_depth",
                "Requests waiting for a free slot.",
                &self.queued,
            ),
            (
                "simdex_writes_pending",
                "Writes admitted and not yet answered.",
                &self.writes,
            ),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} gauge");
            let _ = writeln!(s, "{name} {}", v.load(Relaxed));
        }
        s += "# HELP simdex_refused_total Requests refused before any work, by reason.\n";
        s += "# TYPE simdex_refused_total counter\n";
        for (reason, v) in [
            ("overloaded", &self.refused_overloaded),
            ("too_large", &self.refused_too_large),
            ("timeout", &self.refused_timeout),
            ("unauthorized", &self.refused_unauthorized),
            ("malformed", &self.refused_malformed),
            ("connections", &self.refused_connections),
        ] {
            let _ = writeln!(
                s,
                "simdex_refused_total{{reason=\"{reason}\"}} {}",
                v.load(Relaxed)
            );
        }
        for (name, help, v) in store {
            let kind = if name.ends_with("_total") {
                "counter"
            } else {
                "gauge"
            };
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
        }
        s
    }
}
