//! The simdex command-line tool: one file per subcommand.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod batch;
mod build;
mod calibrate_cmd;
mod dedup_cmd;
mod demo;
mod designs;
mod docs;
mod durable_lines;
mod gen_cmd;
mod hash_cmd;
mod idf_cmd;
mod ingest_cmd;
mod input;
mod inspect;
mod interrupt;
mod names;
mod output;
mod progress;
mod query;
mod serve;
mod spool;
mod store_cmd;
mod util;

/// simdex: a storage engine for simhash fingerprints (Manku, Jain, Das Sarma, WWW 2007).
#[derive(Parser)]
#[command(version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The main job on built-in data: generate fingerprints, build an index, query it, show stats.
    Demo(demo::Args),
    /// Generate deterministic sample fingerprints with planted near-duplicates.
    Gen(gen_cmd::Args),
    /// Build an index directory from fingerprints (any order, duplicates allowed).
    Build(build::Args),
    /// Find stored fingerprints within Hamming distance k of each query.
    Query(query::Args),
    /// Every near-duplicate pair between a batch of new fingerprints and the index (sharded).
    Batch(batch::Args),
    /// Print an index's sizes.
    Stats(inspect::StatsArgs),
    /// Check every checksum and structure of an index.
    Verify(inspect::VerifyArgs),
    /// Fingerprint documents (text, HTML, JSONL): fingerprint_hex<TAB>id per document.
    Hash(hash_cmd::HashArgs),
    /// Every near-duplicate pair (or cluster) among documents, in one command.
    Dedup(dedup_cmd::DedupArgs),
    /// Documents into a document store: id<TAB>matched_id<TAB>similarity per near-duplicate of
    /// something stored before it; the others are stored.
    Ingest(ingest_cmd::IngestArgs),
    /// Precision and recall of "distance <= k" on your corpus or labelled pairs, to choose k.
    Calibrate(calibrate_cmd::CalibrateArgs),
    /// Learn per-feature weights (IDF) from a corpus, for hash/dedup --idf.
    Idf(idf_cmd::IdfArgs),
    /// Insert (fingerprint, document id) pairs into a store (created if missing).
    Insert(store_cmd::InsertArgs),
    /// Delete every pair of some document ids from a store, or every document stored before a time or seq (expiry).
    Delete(store_cmd::DeleteArgs),
    /// Fold a store's logged writes into a new generation of tables.
    Compact(store_cmd::CompactArgs),
    /// Write a new store holding the union of two stores of the same design.
    Merge(store_cmd::MergeArgs),
    /// Rewrite a store's tables with another design, codec or block size.
    Rebuild(store_cmd::RebuildArgs),
    /// Serve a store over HTTP to many clients (JSON and binary bodies; format-spec/openapi.json).
    Serve(serve::Args),
    /// List candidate table designs for n fingerprints and k, with their modelled costs.
    Designs(designs::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            // Usage errors on one line, like every other error (clap's own are several).
            let text = e.to_string();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("bad usage");
            eprintln!(
                "simdex: {} (see simdex --help)",
                first.trim_start_matches("error: ").trim()
            );
            return ExitCode::from(2);
        }
    };
    if matches!(
        cli.command,
        Command::Build(_)
            | Command::Batch(_)
            | Command::Insert(_)
            | Command::Delete(_)
            | Command::Compact(_)
            | Command::Merge(_)
            | Command::Rebuild(_)
            | Command::Ingest(_)
    ) {
        interrupt::install();
    }
    let result = match cli.command {
        Command::Demo(a) => demo::run(a),
        Command::Gen(a) => gen_cmd::run(a),
        Command::Build(a) => build::run(a),
        Command::Query(a) => query::run(a),
        Command::Batch(a) => batch::run(a),
        Command::Stats(a) => inspect::stats(a),
        Command::Verify(a) => inspect::verify(a),
        Command::Designs(a) => designs::run(a),
        Command::Hash(a) => hash_cmd::hash(a),
        Command::Dedup(a) => dedup_cmd::dedup(a),
        Command::Ingest(a) => ingest_cmd::ingest(a),
        Command::Calibrate(a) => calibrate_cmd::calibrate(a),
        Command::Idf(a) => idf_cmd::idf(a),
        Command::Insert(a) => store_cmd::insert(a),
        Command::Delete(a) => store_cmd::delete(a),
        Command::Compact(a) => store_cmd::compact(a),
        Command::Merge(a) => store_cmd::merge(a),
        Command::Rebuild(a) => store_cmd::rebuild(a),
        Command::Serve(a) => serve::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if util::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if interrupt::signalled().is_some() => {
            let why = match e {
                simdex::Error::Cancelled => "nothing was published".to_string(),
                e => e.to_string(),
            };
            eprintln!("simdex: interrupted: {why}");
            ExitCode::from(interrupt::exit_code().unwrap_or(130))
        }
        Err(e) => {
            eprintln!("simdex: error: {e}");
            ExitCode::FAILURE
        }
    }
}
