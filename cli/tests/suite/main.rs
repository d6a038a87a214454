//! The integration tests of the command-line tool, one module per concern, in one binary (one link
//! instead of one per file).

mod common;

mod cli;
mod dedup_quality;
mod hardening;
mod hardening3;
mod ingest;
mod serve;
mod serve_faults;
