//! `simdex insert`, `delete`, `compact`, `merge`, `rebuild`: the store's offline tool.

use std::path::PathBuf;
use std::time::Instant;

use crate::input::{IdReader, PairReader};
use crate::spool::Replayable;
use simdex::{CreateOptions, ShapeRequest, Store, StoreOptions, SyncPolicy};
use simdex::{Error, Result};

use crate::util::parse_size;
use simdex::DesignChoice;

/// Parse `manual`, `per-write` or `group:<ms>`.
pub fn parse_sync(s: &str) -> std::result::Result<SyncPolicy, String> {
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
    fn options(&self) -> StoreOptions {
        StoreOptions::default()
            .with_sync(self.sync)
            .with_max_delta(self.max_delta)
            .with_mem_bytes(self.mem)
            .with_progress(crate::progress::handle(!self.quiet))
    }

    fn open(&self, dir: &std::path::Path) -> Result<Store> {
        let s = Store::open(dir, &self.options())?;
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
    pub layout: StoreLayoutArgs,
    #[command(flatten)]
    pub open: OpenArgs,
}

/// The shape of a store: for `insert` when it creates one (defaults: k 3, design auto, codec
/// h-delta, block size auto), checked against an existing one; for `rebuild`, what changes
/// (anything not given is kept).
#[derive(clap::Args)]
pub struct StoreLayoutArgs {
    /// Largest query distance answered exactly (0..=7).
    #[arg(long)]
    pub k: Option<u32>,
    /// Table design: auto, 20, 16, 10, 4, m<M>c<C>r<R> or m<M1>x<M2>.
    #[arg(long)]
    pub design: Option<String>,
    /// Block size in bytes (power of two, 128..=65536) or auto.
    #[arg(long)]
    pub block_size: Option<String>,
    /// Codec of the tables: h-delta or gap.
    #[arg(long)]
    pub codec: Option<simdex::raw::Codec>,
}

impl StoreLayoutArgs {
    /// The options of a new store.
    fn create_options(&self, expected: u64) -> Result<CreateOptions> {
        Ok(CreateOptions::default()
            .with_k(self.k.unwrap_or(3))
            .with_design(design_choice(self.design.as_deref().unwrap_or("auto")))
            .with_codec(self.codec.unwrap_or(simdex::raw::Codec::HDelta))
            .with_block_size(match &self.block_size {
                Some(b) => crate::util::parse_block_size(b)?,
                None => None,
            })
            .with_expected_keys(expected))
    }

    /// An error naming the first option given that differs from the existing store: `insert`
    /// never changes a store's shape silently (that is `rebuild`'s job).
    fn check_against(&self, dir: &std::path::Path, s: &simdex::StoreStats) -> Result<()> {
        let mut req = ShapeRequest::default();
        req.k = self.k;
        req.design = self.design.clone();
        req.codec = self.codec;
        req.block_size = match &self.block_size {
            Some(b) => Some(crate::util::parse_block_size(b)?),
            None => None,
        };
        match s.shape_difference(&req) {
            None => Ok(()),
            Some((what, given, has)) => Err(Error::InvalidArgument(format!(
                "{} has {what} {has}, but --{what} {given} was given: insert does not change \
                 an existing store (leave the option out, or change it with `simdex rebuild \
                 {} --{what} {given}`)",
                dir.display(),
                dir.display()
            ))),
        }
    }
}

fn design_choice(name: &str) -> DesignChoice {
    match name {
        "auto" => DesignChoice::Auto,
        n => DesignChoice::Named(n.to_string()),
    }
}

/// Arguments of `simdex delete`.
#[derive(clap::Args)]
pub struct DeleteArgs {
    /// Store directory.
    pub dir: PathBuf,
    /// Decimal document ids, one per line (`-` for standard input).
    #[arg(long, default_value = "-")]
    pub ids: PathBuf,
    /// Instead of --ids: a document store's documents to delete by the ids they were ingested
    /// under, one per line (string ids such as URLs, or numbers; `-` for standard input).
    /// Ids with no stored document are passed over and counted.
    #[arg(long, conflicts_with = "ids")]
    pub keys: Option<PathBuf>,
    /// Instead of ids: every document stored more than this long ago (`90d`, `12h`, `30m`,
    /// `45s`), in a document store created with --verify (which records when each was
    /// stored). `simdex compact` then reclaims their space.
    #[arg(long, value_parser = parse_age, conflicts_with_all = ["ids", "keys", "before_seq"])]
    pub older_than: Option<u64>,
    /// Instead of ids: every document numbered below N (documents are numbered 1, 2, ... as
    /// they are stored; `simdex stats` shows the latest), in such a store.
    #[arg(long, value_name = "N", conflicts_with_all = ["ids", "keys"])]
    pub before_seq: Option<u64>,
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
    pub layout: StoreLayoutArgs,
    /// Fingerprints to design for when --design is auto (default: the store's count).
    #[arg(long)]
    pub expected: Option<u64>,
    #[command(flatten)]
    pub open: OpenArgs,
}

const CHUNK: usize = 1 << 16;

/// After SIGINT or SIGTERM, between chunks: sync what was applied, say how much that was (the
/// chunks applied stay: each was logged like a call of its own) and exit with 128 + the signal.
fn stop_if_interrupted(store: &Store, done: u64, what: &str, unit: &str) -> Result<()> {
    let Some(code) = crate::interrupt::exit_code() else {
        return Ok(());
    };
    store.flush()?;
    eprintln!(
        "simdex: interrupted: {what} {done} {unit} into {} (synced); the rest of the input was \
         not applied",
        store.dir().display()
    );
    std::process::exit(code.into())
}

/// Run `insert`.
pub fn insert(a: InsertArgs) -> Result<()> {
    let start = Instant::now();
    if a.dir.exists() && !Store::is_store(&a.dir) {
        let what = if a.dir.join("MANIFEST").is_file() {
            "an index built by `simdex build`, which is read-only"
        } else {
            "not a store (no CURRENT file)"
        };
        return Err(Error::InvalidArgument(format!(
            "{} exists and is {what}; insert into a new directory",
            a.dir.display()
        )));
    }
    // The whole input is checked before anything is written: a bad line at the end must not
    // leave the pairs before it applied. So it is read twice; a pipe is copied once first.
    a.open.options().validate()?;
    let input = Replayable::open(&a.input, &crate::spool::beside(&a.dir))?;
    PairReader::new(input.reader()?, input.name()).try_for_each(|p| p.map(drop))?;
    if !a.dir.exists() {
        Store::create(&a.dir, &a.layout.create_options(a.expected)?)?;
        if !a.open.quiet {
            eprintln!("created store {}", a.dir.display());
        }
    }
    let store = a.open.open(&a.dir)?;
    a.layout.check_against(&a.dir, &store.stats())?;
    let pb = crate::progress::bar(!a.open.quiet, None, "inserting");
    let mut n = 0u64;
    let mut chunk = Vec::with_capacity(CHUNK);
    let mut input = PairReader::new(input.reader()?, input.name());
    loop {
        chunk.clear();
        for p in input.by_ref().take(CHUNK) {
            chunk.push(p?);
        }
        if chunk.is_empty() {
            break;
        }
        stop_if_interrupted(&store, n, "inserted", "pairs")?;
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
    if let Some(keys) = &a.keys {
        return delete_keys(&a, keys);
    }
    let expiry = match (a.older_than, a.before_seq) {
        (Some(ms), _) => Some(simdex::Expiry::StoredBefore(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64)
                .saturating_sub(ms),
        )),
        (_, Some(s)) => Some(simdex::Expiry::SeqBelow(s)),
        _ => None,
    };
    if let Some(e) = expiry {
        let store = a.open.open(&a.dir)?;
        let n = store.expire(e)?;
        store.flush()?;
        if !a.open.quiet {
            eprintln!(
                "deleted {n} documents from {} (`simdex compact` reclaims their space)",
                a.dir.display()
            );
        }
        return Ok(());
    }
    // Every id is checked before any is deleted (as for insert).
    let input = Replayable::open(&a.ids, &crate::spool::beside(&a.dir))?;
    IdReader::new(input.reader()?, input.name()).try_for_each(|p| p.map(drop))?;
    let store = a.open.open(&a.dir)?;
    let mut n = 0u64;
    let mut input = IdReader::new(input.reader()?, input.name());
    loop {
        let chunk: Vec<u64> = input.by_ref().take(CHUNK).collect::<Result<_>>()?;
        if chunk.is_empty() {
            break;
        }
        stop_if_interrupted(&store, n, "deleted the pairs of", "ids")?;
        store.delete_many(&chunk)?;
        n += chunk.len() as u64;
    }
    store.flush()?;
    if !a.open.quiet {
        eprintln!("deleted the pairs of {n} ids from {}", a.dir.display());
    }
    Ok(())
}

/// `delete --keys`: documents by the ids they were ingested under. Every line is checked
/// before any document is deleted.
fn delete_keys(a: &DeleteArgs, keys: &std::path::Path) -> Result<()> {
    use std::io::BufRead;
    let input = Replayable::open(keys, &crate::spool::beside(&a.dir))?;
    let mut ids = Vec::new();
    for (no, line) in input.reader()?.lines().enumerate() {
        let line = line.map_err(|e| Error::io(input.name().to_path_buf(), "read", e))?;
        let line = line.strip_suffix('\r').unwrap_or(&line);
        if line.is_empty() {
            continue;
        }
        let id = simdex::DocId::parse(line);
        id.check().map_err(|e| Error::Parse {
            path: Some(input.name().to_path_buf()),
            location: format!("line {}", no + 1),
            message: e.to_string(),
        })?;
        ids.push(id);
    }
    let store = a.open.open(&a.dir)?;
    if store.recipe().is_none() {
        return Err(Error::InvalidArgument(format!(
            "{} stores raw fingerprints: --keys names documents of a document store (use --ids)",
            a.dir.display()
        )));
    }
    let mut n = 0u64;
    for chunk in ids.chunks(CHUNK) {
        stop_if_interrupted(&store, n, "deleted", "documents")?;
        n += store.delete_documents(chunk)?;
    }
    store.flush()?;
    if !a.open.quiet {
        eprintln!(
            "deleted {n} documents from {} ({} ids had none stored)",
            a.dir.display(),
            (ids.len() as u64).saturating_sub(n)
        );
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
    let sa = crate::util::open_store_read_only(&a.a)?;
    let sb = crate::util::open_store_read_only(&a.b)?;
    let s = Store::merge(&sa, &sb, &a.out)?;
    if !a.quiet {
        eprintln!(
            "merged {} and {} into {} in {:.2?}: {} pairs, {} fingerprints (ids are one \
             namespace: an id in both stores is one document)",
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
    let st = store.stats();
    let l = &a.layout;
    let k = l.k.unwrap_or(st.k);
    // Keep the design unless a new one is named, or a new k needs one.
    let choice = match (&l.design, l.k) {
        (Some(d), _) => design_choice(d),
        (None, Some(k)) if k != st.k => DesignChoice::Auto,
        _ => DesignChoice::Named(st.design.clone()),
    };
    let block_size = match &l.block_size {
        Some(b) => crate::util::parse_block_size(b)?,
        None => st.block_size,
    };
    let codec = l.codec.unwrap_or(st.codec);
    let n = a.expected.unwrap_or(st.fingerprints);
    let design = choice.resolve(n.max(1), k, block_size)?;
    let s = store.rebuild(design.clone(), codec, block_size)?;
    if !a.open.quiet {
        eprintln!(
            "rebuilt {} as design {} ({} tables, codec {}) in {:.2?}: {} pairs, {} bytes",
            a.dir.display(),
            design.name(),
            design.tables().len(),
            codec.name(),
            start.elapsed(),
            s.pairs,
            s.bytes
        );
    }
    Ok(())
}

/// An age as milliseconds: a whole number with a unit, `d`, `h`, `m`, `s` or `ms`.
fn parse_age(s: &str) -> std::result::Result<u64, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let ms: Option<u64> = match unit {
        "d" => Some(86_400_000),
        "h" => Some(3_600_000),
        "m" => Some(60_000),
        "s" => Some(1000),
        "ms" => Some(1),
        _ => None,
    };
    ms.zip(num.parse::<u64>().ok())
        .and_then(|(ms, n)| n.checked_mul(ms))
        .ok_or_else(|| format!("{s:?}: a whole number and a unit (d, h, m, s or ms), as 90d"))
}
