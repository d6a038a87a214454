//! Helpers shared by subcommands.

use std::io::{self, BufWriter, Write};

use simdex::{Error, Result};

/// `println!` that returns an error instead of panicking when stdout is closed
/// (`simdex designs | head`).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*).map_err($crate::util::out_err)
    }};
}

/// Parse a byte size: `4096`, `512K`, `64M`, `1G`, `2T` (powers of 1024; a trailing `B` or
/// `iB` is allowed).
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        Some('T' | 't') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    num.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("{s:?} is not a size like 512M or 1G"))
}

/// `auto` (None) or a block size in bytes.
pub fn parse_block_size(s: &str) -> Result<Option<u32>> {
    if s == "auto" {
        return Ok(None);
    }
    let b: u32 = s.parse().map_err(|_| {
        Error::InvalidArgument(format!("block size {s:?} is not auto or a number of bytes"))
    })?;
    simdex::raw::TableOptions::check_block_size(b)?;
    Ok(Some(b))
}

/// `auto` or a segment length in keys (checked against a block size at build).
pub fn parse_segment_keys(s: &str) -> Result<Option<u32>> {
    if s == "auto" {
        return Ok(None);
    }
    let n: u32 = s.parse().map_err(|_| {
        Error::InvalidArgument(format!(
            "segment length {s:?} is not auto or a number of keys"
        ))
    })?;
    simdex::raw::TableOptions::check_segment_keys(
        n,
        simdex::raw::TableOptions::MAX_SEGMENTED_BLOCK_SIZE,
    )?;
    Ok(Some(n))
}

/// ", segments of N keys" for a segmented layout (and how many of `tables` tables align
/// theirs to their prefix runs), nothing for format 1.
pub fn segments_note(segment_keys: u32, aligned: usize, tables: usize) -> String {
    match (segment_keys, aligned) {
        (0, _) => String::new(),
        (n, 0) => format!(", segments of {n} keys"),
        (_, a) => format!(
            ", segments aligned to prefix runs in {a} of {tables} tables (at least {} keys)",
            simdex::raw::TableOptions::ALIGNED_SEGMENT_KEYS
        ),
    }
}

/// Buffered stdout.
pub fn stdout() -> BufWriter<io::StdoutLock<'static>> {
    BufWriter::with_capacity(1 << 16, io::stdout().lock())
}

/// Map a write error on stdout.
pub fn out_err(e: io::Error) -> Error {
    Error::io(None, "write to stdout", e)
}

/// Flush stdout, mapping the error.
pub fn flush(w: &mut impl Write) -> Result<()> {
    w.flush().map_err(out_err)
}

/// True for a write to a closed pipe (`simdex query ... | head`): not an error worth a message.
pub fn is_broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
}

/// Human-readable bytes.
pub fn human_bytes(b: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}", units[i])
    } else {
        format!("{v:.2} {}", units[i])
    }
}

/// Open a store read-only, printing on stderr what recovery found (a torn or damaged log
/// tail is never dropped silently).
pub fn open_store_read_only(dir: &std::path::Path) -> Result<simdex::ReadOnlyStore> {
    open_store_read_only_with(dir, &simdex::StoreOptions::default())
}

/// As [`open_store_read_only`], with options (e.g. `populate`).
pub fn open_store_read_only_with(
    dir: &std::path::Path,
    opts: &simdex::StoreOptions,
) -> Result<simdex::ReadOnlyStore> {
    let s = simdex::ReadOnlyStore::open_with(dir, opts)?;
    for w in s.recovery().warnings() {
        eprintln!("simdex: warning: {w}");
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("64KiB").unwrap(), 64 << 10);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
