//! `simdex insert`, `delete`, `compact`, `merge`, `rebuild`: the store's offline tool.

use std::path::PathBuf;
use std::time::Instant;

use crate::input::{IdReader, PairReader};
use simdex::store::{CreateOptions, Store, StoreOptions, SyncPolicy};
use simdex::{Error, Result};

use crate::build::LayoutArgs;
use crate::util::parse_size;

/// Parse `manual`, `per-write` or `group:<ms>`.
fn parse_sync(s: &str) -> std::result::Result<SyncPolicy, String> {
    s.parse::<SyncPolicy>().map_err(|e| e.to_string())
}

/// Options shared by every command that opens a store for writing.
#[derive(clap::Args)]
pub struct OpenArgs {
    /// Log sync policy: manual (sync once at the end; the default for bulk loads), per-write,
    /// or group:<ms>.
    #[arg(long, default_value = "manual", value_parser = parse_sync)]
    pub sync: SyncPolicy,
    /// Compact when the in-memory delta holds this many writes.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_delta: u64,
    /// Memory budget for re-sorting (rebuild).
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    pub mem: u64,
    /// No progress bar and no summary.
    #[arg(long)]
    pub quiet: bool,
}

impl OpenArgs {
    fn open(&self, dir: &std::path::Path) -> Result<Store> {
        let s = Store::open(
            dir,
            &StoreOptions::default()
                .with_sync(self.sync)
                .with_max_delta(self.max_delta)
                .with_mem_bytes(self.mem)
                .with_progress(crate::progress::handle(!self.quiet)),
        )?;
        for w in s.recovery().warnings() {
            eprintln!("simdex: warning: {w}");
        }
        Ok(s)
    }
}

/// Arguments of `simdex insert`.
#[derive(clap::Args)]
pub struct InsertArgs {
    /// Store directory (created if it does not exist).
    pub dir: PathBuf,
    /// Lines of `FINGERPRINT_HEX ID` (`-` for standard input).
    #[arg(long, default_value = "-")]
    pub input: PathBuf,
    /// Fingerprints the store is expected to hold, for an automatic design when creating it.
    #[arg(long, default_value_t = 10_000_000)]
    pub expected: u64,
    #[command(flatten)]
    pub layout: LayoutArgs,
    #[command(flatten)]
    pub open: OpenArgs,
}

/// Arguments of `simdex delete`.
#[derive(clap::Args)]
pub struct DeleteArgs {
    /// Store directory.
    pub dir: PathBuf,
    /// Decimal document ids, one per line (`-` for standard input).
    #[arg(long, default_value = "-")]
    pub ids: PathBuf,
    #[command(flatten)]
    pub open: OpenArgs,
}

/// Arguments of `simdex compact`.
#[derive(clap::Args)]
pub struct CompactArgs {
    /// Store directory.
    pub dir: PathBuf,
    #[command(flatten)]
    pub open: OpenArgs,
}

/// Arguments of `simdex merge`.
#[derive(clap::Args)]
pub struct MergeArgs {
    /// First store.
    pub a: PathBuf,
    /// Second store (same design).
    pub b: PathBuf,
    /// The new store (must not exist).
    #[arg(long)]
    pub out: PathBuf,
    /// No summary.
    #[arg(long)]
    pub quiet: bool,
}

/// Arguments of `simdex rebuild`.
#[derive(clap::Args)]
pub struct RebuildArgs {
    /// Store directory.
    pub dir: PathBuf,
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// Fingerprints to design for when --design is auto (default: the store's count).
    #[arg(long)]
    pub expected: Option<u64>,
    #[command(flatten)]
    pub open: OpenArgs,
}

const CHUNK: usize = 1 << 16;

/// Run `insert`.
pub fn insert(a: InsertArgs) -> Result<()> {
    let start = Instant::now();
    if !a.dir.exists() {
        let o = a.layout.options(a.open.mem, false)?;
        Store::create(
            &a.dir,
            &CreateOptions::default()
                .with_k(o.k)
                .with_design(o.design)
                .with_codec(o.codec)
                .with_block_size(o.block_size)
                .with_expected_keys(a.expected),
        )?;
        if !a.open.quiet {
            eprintln!("created store {}", a.dir.display());
        }
    } else if !Store::is_store(&a.dir) {
        return Err(Error::InvalidArgument(format!(
            "{} exists and is not a store (an index built by `simdex build` is read-only; \
             insert into a new directory)",
            a.dir.display()
        )));
    }
    let store = a.open.open(&a.dir)?;
    let pb = crate::progress::bar(!a.open.quiet, None, "inserting");
    let mut n = 0u64;
    let mut chunk = Vec::with_capacity(CHUNK);
    let mut input = PairReader::open(&a.input)?;
    loop {
        chunk.clear();
        for p in input.by_ref().take(CHUNK) {
            chunk.push(p?);
        }
        if chunk.is_empty() {
            break;
        }
        store.insert_many(&chunk)?;
        n += chunk.len() as u64;
        pb.set_position(n);
    }
    pb.finish_and_clear();
    store.flush()?;
    if !a.open.quiet {
        let s = store.stats();
        eprintln!(
            "inserted {n} pairs into {} in {:.2?}: generation {} holds {} pairs, {} in the delta",
            a.dir.display(),
            start.elapsed(),
            s.generation,
            s.pairs,
            s.delta_pairs
        );
    }
    Ok(())
}

/// Run `delete`.
pub fn delete(a: DeleteArgs) -> Result<()> {
    let store = a.open.open(&a.dir)?;
    let mut n = 0u64;
    let mut input = IdReader::open(&a.ids)?;
    loop {
        let chunk: Vec<u64> = input.by_ref().take(CHUNK).collect::<Result<_>>()?;
        if chunk.is_empty() {
            break;
        }
        store.delete_many(&chunk)?;
        n += chunk.len() as u64;
    }
    store.flush()?;
    if !a.open.quiet {
        eprintln!("deleted the pairs of {n} ids from {}", a.dir.display());
    }
    Ok(())
}

/// Run `compact`.
pub fn compact(a: CompactArgs) -> Result<()> {
    let start = Instant::now();
    let store = a.open.open(&a.dir)?;
    let r = store.compact()?;
    if !a.open.quiet {
        match r {
            None => eprintln!("{}: nothing to compact", a.dir.display()),
            Some(s) => eprintln!(
                "compacted {} into generation {} in {:.2?}: {} pairs, {} fingerprints \
                 ({} new, {} dropped), {} bytes",
                a.dir.display(),
                store.stats().generation,
                start.elapsed(),
                s.pairs,
                s.fingerprints,
                s.added,
                s.dropped,
                s.bytes
            ),
        }
    }
    Ok(())
}

/// Run `merge`.
pub fn merge(a: MergeArgs) -> Result<()> {
    let start = Instant::now();
    let sa = Store::open_read_only(&a.a)?;
    let sb = Store::open_read_only(&a.b)?;
    let s = Store::merge(&sa, &sb, &a.out)?;
    if !a.quiet {
        eprintln!(
            "merged {} and {} into {} in {:.2?}: {} pairs, {} fingerprints",
            a.a.display(),
            a.b.display(),
            a.out.display(),
            start.elapsed(),
            s.pairs,
            s.fingerprints
        );
    }
    Ok(())
}

/// Run `rebuild`.
pub fn rebuild(a: RebuildArgs) -> Result<()> {
    let start = Instant::now();
    let store = a.open.open(&a.dir)?;
    let o = a.layout.options(a.open.mem, false)?;
    let n = a.expected.unwrap_or(store.stats().fingerprints);
    let design = o.design.resolve(n.max(1), o.k, o.block_size)?;
    let s = store.rebuild(design.clone(), o.codec, o.block_size)?;
    if !a.open.quiet {
        eprintln!(
            "rebuilt {} as design {} ({} tables, codec {}) in {:.2?}: {} pairs, {} bytes",
            a.dir.display(),
            design.name(),
            design.tables().len(),
            o.codec.name(),
            start.elapsed(),
            s.pairs,
            s.bytes
        );
    }
    Ok(())
}
