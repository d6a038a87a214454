//! Reading fingerprints from files or stdin, in the two input formats of the CLI:
//!
//! * `u64`: raw little-endian 8-byte words, nothing else; a length that is not a multiple of 8 is
//!   an error naming the byte offset of the partial record.
//! * `hex`: one fingerprint per line as 16 hex digits (optional `0x`, either case); blank lines
//!   are skipped; anything else is an error naming the line.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use simdex::parse_hex;
use simdex::{Error, Result};

/// An input format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Little-endian 8-byte words.
    U64,
    /// One hex fingerprint per line.
    Hex,
}

impl std::str::FromStr for Format {
    type Err = Error;
    fn from_str(s: &str) -> Result<Format> {
        match s {
            "u64" => Ok(Format::U64),
            "hex" => Ok(Format::Hex),
            _ => Err(Error::InvalidArgument(format!(
                "unknown format {s:?}: use u64 or hex"
            ))),
        }
    }
}

/// Streams fingerprints from a source, with errors that name the input and the position.
pub struct FingerprintReader {
    src: Box<dyn BufRead + Send>,
    path: Option<PathBuf>,
    format: Format,
    /// Bytes consumed (u64) or lines read (hex).
    position: u64,
    line: Vec<u8>,
    done: bool,
}

impl FingerprintReader {
    /// Read `path` (`-` is stdin).
    pub fn open(path: &Path, format: Format) -> Result<FingerprintReader> {
        if path == Path::new("-") {
            return Ok(FingerprintReader::new(
                Box::new(BufReader::with_capacity(1 << 20, io::stdin())),
                Some(PathBuf::from("<stdin>")),
                format,
            ));
        }
        let f = File::open(path).map_err(|e| Error::io(path.to_path_buf(), "open", e))?;
        if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            return Err(Error::io(
                path.to_path_buf(),
                "read",
                io::Error::other("is a directory"),
            ));
        }
        Ok(FingerprintReader::new(
            Box::new(BufReader::with_capacity(1 << 20, f)),
            Some(path.to_path_buf()),
            format,
        ))
    }

    /// Read from any buffered source; `path` is used in error messages.
    pub fn new(
        src: Box<dyn BufRead + Send>,
        path: Option<PathBuf>,
        format: Format,
    ) -> FingerprintReader {
        FingerprintReader {
            src,
            path,
            format,
            position: 0,
            line: Vec::new(),
            done: false,
        }
    }

    fn parse_error(&self, location: String, message: String) -> Error {
        Error::Parse {
            path: self.path.clone(),
            location,
            message,
        }
    }

    fn io_error(&self, e: io::Error) -> Error {
        Error::Io {
            path: self.path.clone(),
            op: "read",
            source: e,
        }
    }

    fn next_u64(&mut self) -> Result<Option<u64>> {
        let mut buf = [0u8; 8];
        let mut got = 0;
        while got < 8 {
            match self.src.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_error(e)),
            }
        }
        match got {
            0 => Ok(None),
            8 => {
                self.position += 8;
                Ok(Some(u64::from_le_bytes(buf)))
            }
            _ => Err(self.parse_error(
                format!("byte offset {}", self.position),
                format!(
                    "truncated record: {got} trailing bytes; u64 input must be a multiple of 8 bytes \
                     (is this a hex file? use --format hex)"
                ),
            )),
        }
    }

    fn next_hex(&mut self) -> Result<Option<u64>> {
        loop {
            self.line.clear();
            let n = self
                .src
                .read_until(b'\n', &mut self.line)
                .map_err(|e| self.io_error(e))?;
            if n == 0 {
                return Ok(None);
            }
            self.position += 1;
            let parsed = match line_text(&self.line) {
                Ok(l) if l.trim().is_empty() => continue,
                Ok(l) => parse_hex(l),
                Err(m) => Err(m),
            };
            return parsed
                .map(Some)
                .map_err(|m| self.parse_error(format!("line {}", self.position), m));
        }
    }
}

impl Iterator for FingerprintReader {
    type Item = Result<u64>;
    fn next(&mut self) -> Option<Result<u64>> {
        if self.done {
            return None;
        }
        let r = match self.format {
            Format::U64 => self.next_u64(),
            Format::Hex => self.next_hex(),
        };
        match r {
            Ok(Some(x)) => Some(Ok(x)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Decode a whole in-memory input.
#[cfg(test)]
pub fn parse_bytes(bytes: &[u8], format: Format) -> Result<Vec<u64>> {
    let src: Box<dyn BufRead + Send> = Box::new(io::Cursor::new(bytes.to_vec()));
    FingerprintReader::new(src, None, format).collect()
}

/// Non-blank lines of a text source, numbered, with located parse errors. Lines are read as
/// bytes: one that is not UTF-8 is an error naming its line, like any other bad line.
struct Lines {
    src: Box<dyn BufRead + Send>,
    path: Option<PathBuf>,
    line_no: u64,
    buf: Vec<u8>,
    done: bool,
}

impl Lines {
    fn new(src: Box<dyn BufRead + Send>, path: &Path) -> Lines {
        Lines {
            src,
            path: Some(path.to_path_buf()),
            line_no: 0,
            buf: Vec::new(),
            done: false,
        }
    }

    /// The next non-blank line parsed by `parse`; errors name the file and line.
    fn next_with<T>(
        &mut self,
        parse: impl Fn(&str) -> std::result::Result<T, String>,
    ) -> Option<Result<T>> {
        if self.done {
            return None;
        }
        loop {
            self.buf.clear();
            match self.src.read_until(b'\n', &mut self.buf) {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(_) => {}
                Err(e) => {
                    self.done = true;
                    return Some(Err(Error::Io {
                        path: self.path.clone(),
                        op: "read",
                        source: e,
                    }));
                }
            }
            self.line_no += 1;
            let r = match line_text(&self.buf) {
                Ok(l) if l.trim().is_empty() => continue,
                Ok(l) => parse(l.trim()),
                Err(m) => Err(m),
            };
            let r = r.map_err(|message| Error::Parse {
                path: self.path.clone(),
                location: format!("line {}", self.line_no),
                message,
            });
            self.done = r.is_err();
            return Some(r);
        }
    }
}

/// A line's text, or why it is not UTF-8 (the error names the column; the caller the line).
fn line_text(b: &[u8]) -> std::result::Result<&str, String> {
    std::str::from_utf8(b)
        .map_err(|e| format!("not UTF-8 (invalid byte at column {})", e.valid_up_to() + 1))
}

/// `s` quoted for an error message, cut to its first 60 characters: a bad line may be megabytes.
fn quote(s: &str) -> String {
    match s.char_indices().nth(60) {
        Some((cut, _)) => format!("{:?}... ({} bytes in all)", &s[..cut], s.len()),
        None => format!("{s:?}"),
    }
}

fn parse_id(s: &str) -> std::result::Result<u64, String> {
    s.parse::<u64>().map_err(|_| {
        format!(
            "{} is not a document id (a decimal integer in 0..=18446744073709551615)",
            quote(s)
        )
    })
}

/// Streams `FINGERPRINT_HEX ID` pairs, one per line (whitespace between, id decimal; blank lines
/// skipped): the input of `simdex insert`.
pub struct PairReader(Lines);

impl PairReader {
    /// Read `src`, named `path` in errors.
    pub fn new(src: Box<dyn BufRead + Send>, path: &Path) -> PairReader {
        PairReader(Lines::new(src, path))
    }
}

impl Iterator for PairReader {
    type Item = Result<(u64, u64)>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next_with(|line| {
            let mut it = line.split_whitespace();
            let (Some(fp), Some(id), None) = (it.next(), it.next(), it.next()) else {
                return Err(format!(
                    "expected \"FINGERPRINT_HEX ID\" (two fields), found {}",
                    quote(line)
                ));
            };
            Ok((parse_hex(fp)?, parse_id(id)?))
        })
    }
}

/// Streams decimal document ids, one per line: the input of `simdex delete`.
pub struct IdReader(Lines);

impl IdReader {
    /// Read `src`, named `path` in errors.
    pub fn new(src: Box<dyn BufRead + Send>, path: &Path) -> IdReader {
        IdReader(Lines::new(src, path))
    }
}

impl Iterator for IdReader {
    type Item = Result<u64>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next_with(parse_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_and_hex_inputs() {
        let mut b = Vec::new();
        for x in [1u64, u64::MAX, 0] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        assert_eq!(parse_bytes(&b, Format::U64).unwrap(), vec![1, u64::MAX, 0]);
        b.push(7);
        let e = parse_bytes(&b, Format::U64).unwrap_err().to_string();
        assert!(e.contains("byte offset 24"), "{e}");
        let text = b"0000000000000001\n\n0xFFFFFFFFFFFFFFFF\r\n";
        assert_eq!(parse_hex_ok(text), vec![1, u64::MAX]);
        let e = parse_bytes(b"0000000000000001\nzz\n", Format::Hex)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
        assert!(parse_bytes(b"", Format::Hex).unwrap().is_empty());
    }

    fn parse_hex_ok(b: &[u8]) -> Vec<u64> {
        parse_bytes(b, Format::Hex).unwrap()
    }
}
