//! `simdex query`: near-duplicate lookups, one output line per match.

use std::io::Write;
use std::path::PathBuf;

use crate::input::{FingerprintReader, Format};
use simdex::OpenOptions;
use simdex::{Index, ReadOnlyStore, Result, Store, StoreOptions};

/// Arguments of `simdex query`.
#[derive(clap::Args)]
pub struct Args {
    /// Index or store directory.
    pub dir: PathBuf,
    /// Largest distance to report (default: the index's k).
    #[arg(long)]
    pub k: Option<u32>,
    /// Query fingerprints (`-` for standard input).
    #[arg(long, default_value = "-")]
    pub input: PathBuf,
    /// Input format: hex or u64.
    #[arg(long, default_value = "hex")]
    pub format: Format,
    /// One JSON object per query instead of one tab-separated line per match.
    #[arg(long)]
    pub json: bool,
    /// Print timings on stderr: open time, query time in the library (µs per query, queries/s,
    /// excluding reading input and writing output), and probes, blocks and keys per query.
    #[arg(long)]
    pub timing: bool,
    /// Read and map every table page and check every block's checksum before the first
    /// query: no page faults or first-read checks while querying (latency flat from the first
    /// query) at the cost of open time. For long runs over a large index, not for a few
    /// lookups.
    #[arg(long)]
    pub populate: bool,
    /// Read the whole index into memory (huge pages where the kernel allows) and check every
    /// block's checksum before the first query: immune to files changed underneath and to the
    /// page cache's evictions, at the cost of its size in RAM and the read time. Queries are as
    /// fast as with --populate where the kernel maps the files in 2 MiB pages (a fresh build on
    /// ext4, Linux 6.18: 1.1x faster than in memory at 1B), and faster where it cannot.
    /// Indexes only, not stores.
    #[arg(long, conflicts_with = "populate")]
    pub in_memory: bool,
}

/// Queries answered per parallel batch (at least; an index reads more, [`index_batch`]).
const BATCH: usize = 1 << 14;

/// The most queries an index is asked at once (16 MiB of them, and their answers): enough for
/// the scan of an index of up to 16M keys. Larger ones would not scan a batch this size (nor,
/// at their size, one whose probe lists fit the library's 1 GiB), so they get [`BATCH`].
const MAX_BATCH: usize = 1 << 21;

/// Queries asked of an index of `keys` fingerprints at once: a quarter as many as it stores
/// (within [`BATCH`]..=[`MAX_BATCH`]), so that a large input reaches `Index::near_many`'s
/// batch scan (taken from an eighth on, where it pays: 1.15-1.4x the queries per second at
/// 1M keys, 1.7-2x at 10M; docs/log/benchmarks.md, “a large `near_many` answered by one
/// scan”) rather than query by query;
/// [`BATCH`] where no batch this tool asks would reach it.
fn index_batch(keys: u64) -> usize {
    match usize::try_from(keys / 4) {
        Ok(q) if q / 2 <= MAX_BATCH => q.clamp(BATCH, MAX_BATCH),
        _ => BATCH,
    }
}

/// One query's matches: a tab-separated line per match (`query fp distance[ ids]`) or one JSON
/// object. `ids` is `Some` for stores (comma-separated document ids).
fn write_matches(
    w: &mut impl Write,
    json: bool,
    q: u64,
    matches: impl Iterator<Item = (u64, u32, Option<String>)>,
) -> Result<()> {
    if json {
        let items: Vec<String> = matches
            .map(|(fp, d, ids)| {
                let ids = ids.map_or_else(String::new, |i| format!(",\"ids\":[{i}]"));
                format!("{{\"fingerprint\":\"{fp:016x}\",\"distance\":{d}{ids}}}")
            })
            .collect();
        writeln!(
            w,
            "{{\"query\":\"{q:016x}\",\"matches\":[{}]}}",
            items.join(",")
        )
    } else {
        matches.into_iter().try_for_each(|(fp, d, ids)| match ids {
            Some(i) => writeln!(w, "{q:016x}\t{fp:016x}\t{d}\t{i}"),
            None => write_line(w, q, fp, d),
        })
    }
    .map_err(crate::util::out_err)
}

/// `{q:016x}\t{fp:016x}\t{d}\n` written directly: through `format_args!` a line cost about
/// 0.8k instructions, 4% of a 10M-key query's whole process at one match a query. Also
/// `simdex batch`'s pair line.
pub(crate) fn write_line(w: &mut impl Write, q: u64, fp: u64, d: u32) -> std::io::Result<()> {
    let mut line = [0u8; 45];
    for (at, x) in [(0, q), (17, fp)] {
        line[at..at + 8].copy_from_slice(&hex8((x >> 32) as u32));
        line[at + 8..at + 16].copy_from_slice(&hex8(x as u32));
        line[at + 16] = b'\t';
    }
    let digits = d.checked_ilog10().unwrap_or(0) as usize + 1;
    for (i, c) in line[34..34 + digits].iter_mut().enumerate() {
        *c = b'0' + (d / 10u32.pow((digits - 1 - i) as u32) % 10) as u8;
    }
    line[34 + digits] = b'\n';
    w.write_all(&line[..35 + digits])
}

/// The 8 lower-case hex digits of `x`, a byte per nibble at once (a table lookup per digit cost
/// ~180 instructions a line, 2% of a 1M-key query's whole process).
fn hex8(x: u32) -> [u8; 8] {
    // Nibble i (from the top) into byte i, big-endian.
    let x = x as u64;
    let x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    let x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    let n = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    // '0' + n, and 'a' - '0' - 10 = 39 more where n >= 10 (n + 6 carries into bit 4).
    let letters = ((n + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    (n + 0x3030_3030_3030_3030 + letters * 39).to_be_bytes()
}

/// Run.
pub fn run(a: Args) -> Result<()> {
    if Store::is_store(&a.dir) {
        if a.in_memory {
            return Err(simdex::Error::InvalidArgument(format!(
                "--in-memory reads an index into memory; {} is a store",
                a.dir.display()
            )));
        }
        return run_store(a);
    }
    let opened = std::time::Instant::now();
    if a.in_memory {
        let idx = Index::open_in_memory(&a.dir)?;
        return run_index(a, idx, opened.elapsed());
    }
    let idx = Index::open_with(&a.dir, &OpenOptions::default().with_populate(a.populate))?;
    run_index(a, idx, opened.elapsed())
}

/// Refill `batch` with the input's next (up to) `size` queries; false once none are left.
fn next_batch(input: &mut FingerprintReader, batch: &mut Vec<u64>, size: usize) -> Result<bool> {
    batch.clear();
    for q in input.by_ref().take(size) {
        batch.push(q?);
    }
    Ok(!batch.is_empty())
}

/// Answer every query of the input from an open index.
fn run_index<D: AsRef<[u8]> + Sync>(
    a: Args,
    idx: Index<D>,
    open_time: std::time::Duration,
) -> Result<()> {
    let mut query_time = std::time::Duration::ZERO;
    let k = a.k.unwrap_or(idx.design().k());
    let mut input = FingerprintReader::open(&a.input, a.format)?;
    let mut w = crate::util::stdout();
    let size = index_batch(idx.len());
    let mut batch = Vec::new();
    while next_batch(&mut input, &mut batch, size)? {
        let t0 = std::time::Instant::now();
        let results = idx.near_many(&batch, k)?;
        query_time += t0.elapsed();
        for (q, ms) in batch.iter().zip(results.iter()) {
            write_matches(
                &mut w,
                a.json,
                *q,
                ms.iter().map(|m| (m.fingerprint, m.distance, None)),
            )?;
        }
    }
    crate::util::flush(&mut w)?;
    if a.timing {
        let c = idx.counters();
        print_timing(c.queries, work(&c), open_time, query_time);
    }
    Ok(())
}

/// `--timing`: what the queries cost inside the library. `work` is what the tables' counters
/// gained while they ran (a store's delta is probed in memory and not counted).
fn print_timing(
    queries: u64,
    work: [u64; 4],
    open: std::time::Duration,
    time: std::time::Duration,
) {
    let n = queries.max(1) as f64;
    let [probes, blocks, keys, candidates] = work.map(|x| x as f64 / n);
    let threads = rayon::current_num_threads();
    eprintln!(
        "timing: open {:.3} ms; {queries} queries in {:.3} s on {threads} threads: {:.2} µs/query \
         (wall), {:.0} queries/s; per query {probes:.1} probes, {blocks:.1} blocks and \
         {keys:.1} keys decoded, {candidates:.2} candidates",
        open.as_secs_f64() * 1e3,
        time.as_secs_f64(),
        time.as_secs_f64() * 1e6 / n,
        n / time.as_secs_f64().max(1e-9),
    );
}

/// The work counters of `c`: probes, blocks, keys, candidates.
fn work(c: &simdex::QueryCounters) -> [u64; 4] {
    [c.probes, c.blocks_decoded, c.keys_decoded, c.candidates]
}

/// Queries against a store: matches carry their document ids. Queries go in batches to
/// `Store::near_many`, sized as an index's are (its live generation's), over all cores;
/// `--timing` reports the store's tables' work.
fn run_store(a: Args) -> Result<()> {
    let opened = std::time::Instant::now();
    let opts = StoreOptions::default().with_populate(a.populate);
    let store = crate::util::open_store_read_only_with(&a.dir, &opts)?;
    let open_time = opened.elapsed();
    let mut query_time = std::time::Duration::ZERO;
    let k = a.k.unwrap_or_else(|| store.k());
    let mut input = FingerprintReader::open(&a.input, a.format)?;
    let mut w = crate::util::stdout();
    let size = index_batch(store.stats().fingerprints);
    let mut batch = Vec::new();
    let (before, mut asked) = (work(&store.counters().queries), 0u64);
    while next_batch(&mut input, &mut batch, size)? {
        asked += batch.len() as u64;
        let t0 = std::time::Instant::now();
        let results = store.near_many(&batch, k)?;
        query_time += t0.elapsed();
        for (i, q) in batch.iter().enumerate() {
            let rows = &results.rows[results.offsets[i]..results.offsets[i + 1]];
            // A fingerprint's rows (one an id) are adjacent: one match with its ids.
            let mut matches = Vec::new();
            for run in rows.chunk_by(|a, b| a.fingerprint == b.fingerprint) {
                let ids = run
                    .iter()
                    .map(|r| caller_id(&store, r.id, a.json))
                    .collect::<Result<Vec<String>>>()?;
                matches.push((run[0].fingerprint, run[0].distance, Some(ids.join(","))));
            }
            write_matches(&mut w, a.json, *q, matches.into_iter())?;
        }
    }
    crate::util::flush(&mut w)?;
    if a.timing {
        let after = work(&store.counters().queries);
        let gained = std::array::from_fn(|i| after[i].saturating_sub(before[i]));
        print_timing(asked, gained, open_time, query_time);
    }
    Ok(())
}

/// How a match's document is named: by the id its caller gave (a document store's string
/// keys as given, a JSON string in JSON), else by its number.
fn caller_id(store: &ReadOnlyStore, id: u64, json: bool) -> Result<String> {
    if store.recipe().is_none() {
        return Ok(id.to_string());
    }
    Ok(match store.doc_key(id)? {
        Some(k) if json => json_string(&k),
        Some(k) => k.to_string(),
        None => id.to_string(),
    })
}

/// `s` as a JSON string.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::{BATCH, MAX_BATCH, index_batch, write_line};

    /// An index is asked a quarter of its size at once, enough to reach its scan (an eighth),
    /// and a plain batch where no batch within bounds would.
    #[test]
    fn batches_reach_the_scan_where_they_can() {
        assert_eq!(index_batch(0), BATCH);
        assert_eq!(index_batch(50_000), BATCH);
        assert_eq!(index_batch(100_000), 25_000);
        assert_eq!(index_batch(1_000_000), 250_000);
        for keys in [1u64 << 20, 10_000_000, 16 << 20] {
            let b = index_batch(keys) as u64;
            assert!(b >= keys / 8 && b <= MAX_BATCH as u64, "{keys} keys: {b}");
        }
        for keys in [(16 << 20) + 8, 100_000_000, u64::MAX] {
            assert_eq!(index_batch(keys), BATCH, "{keys} keys");
        }
    }

    /// The direct line writer prints what the format string did.
    #[test]
    fn lines_as_formatted() {
        for (q, fp, d) in [
            (0u64, 0u64, 0u32),
            (u64::MAX, 0x0123_4567_89ab_cdef, 3),
            (0xf00d, 1, 10),
            (1 << 63, u64::MAX - 1, 64),
            (7, 9, u32::MAX),
            (0x9a9a_0f0f_a9a9_f0f0, 0xfedc_ba98_7654_3210, 1),
        ] {
            let mut got = Vec::new();
            write_line(&mut got, q, fp, d).unwrap();
            assert_eq!(
                String::from_utf8(got).unwrap(),
                format!("{q:016x}\t{fp:016x}\t{d}\n")
            );
        }
        // Every nibble value in every place.
        for x in simdex::raw::with_planted(10_000, 0, &[], 0x2545_F491_4F6C_DD1D).unwrap() {
            let mut got = Vec::new();
            write_line(&mut got, x, !x, 0).unwrap();
            assert_eq!(got, format!("{x:016x}\t{:016x}\t0\n", !x).as_bytes());
        }
    }
}
