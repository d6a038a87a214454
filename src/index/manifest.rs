//! The index manifest: a small text file naming the design and every table file
//! (`format-spec/index.md`).
//!
//! ```text
//! simdex-index 1
//! design 10
//! k 3
//! radius 0
//! keys 1000000
//! codec 1
//! block-size 1024
//! tables 10
//! table 0 26 table-00.sxt 6051234 9f3a0c11d2e4f608 0,1,2,...,63
//! ...
//! crc32 1a2b3c4d
//! ```
//!
//! Text, because an operator should be able to read what an index is with `cat`; a crc32 on the
//! last line, because a truncated or edited manifest must not open.

use std::fmt::Write as _;

use crate::design::{Design, TableDesign};
use crate::error::{Error, Result};
use crate::permutation::Permutation;
use crate::sealed::{check_seal, seal, split_sealed};

/// File name of the manifest inside an index directory.
pub const MANIFEST_NAME: &str = "MANIFEST";
/// Index format version.
pub const INDEX_VERSION: u32 = 1;

/// One table file of an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableEntry {
    /// File name inside the index directory.
    pub file: String,
    /// File size in bytes.
    pub bytes: u64,
    /// xxh3-64 digest of the whole file.
    ///
    /// Not a crc32: a table file is a chain of structures that each end in their own crc32, and
    /// CRC-32 is affine over GF(2), so the crc32 of such a whole file depends only on the
    /// structure lengths and the few bytes outside any structure; every valid table of one size
    /// has the same whole-file crc32 (seen on the golden vectors). xxh3 has no such structure.
    pub xxh3: u64,
}

/// The parsed manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The design (tables, prefixes, k, radius).
    pub design: Design,
    /// Distinct fingerprints in the index.
    pub keys: u64,
    /// Codec of every table.
    pub codec: u32,
    /// Block size of every table.
    pub block_size: u32,
    /// One entry per design table, in order.
    pub tables: Vec<TableEntry>,
}

/// File name of table `i` in an index directory.
pub fn table_file_name(i: usize) -> String {
    format!("table-{i:02}.sxt")
}

fn perm_text(p: &Permutation) -> String {
    p.as_array()
        .iter()
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

impl Manifest {
    /// Serialize.
    pub fn encode(&self) -> String {
        let d = &self.design;
        let mut s = String::new();
        let _ = writeln!(s, "simdex-index {INDEX_VERSION}");
        let _ = writeln!(s, "design {}", d.name());
        let _ = writeln!(s, "k {}", d.k());
        let _ = writeln!(s, "radius {}", d.radius());
        let _ = writeln!(s, "keys {}", self.keys);
        let _ = writeln!(s, "codec {}", self.codec);
        let _ = writeln!(s, "block-size {}", self.block_size);
        let _ = writeln!(s, "tables {}", self.tables.len());
        for (i, (t, e)) in d.tables().iter().zip(&self.tables).enumerate() {
            let _ = writeln!(
                s,
                "table {i} {} {} {} {:016x} {}",
                t.prefix_bits,
                e.file,
                e.bytes,
                e.xxh3,
                perm_text(&t.permutation)
            );
        }
        seal(s)
    }

    /// Write `dir/MANIFEST` atomically.
    pub fn write_to(&self, dir: &std::path::Path) -> Result<()> {
        crate::atomic::write_file(&dir.join(MANIFEST_NAME), |w| {
            std::io::Write::write_all(w, self.encode().as_bytes())
                .map_err(|e| Error::io(None, "write manifest", e))
        })
    }

    /// Parse and validate.
    pub fn decode(bytes: &[u8]) -> Result<Manifest> {
        let bad = |line: usize, expected: &str, found: &str| {
            Error::corrupt(
                format!("manifest line {line}"),
                0,
                expected.to_string(),
                format!("{found:?}"),
            )
        };
        // The crc line is the last line; it covers every byte before it.
        let (body, crc_line) = split_sealed(bytes, "manifest")?;
        let first = body.lines().next().unwrap_or("");
        match first.strip_prefix("simdex-index ") {
            Some(v) if v == INDEX_VERSION.to_string() => {}
            Some(v) => {
                return Err(Error::Unsupported {
                    path: None,
                    what: "index format version",
                    expected: INDEX_VERSION.to_string(),
                    found: v.parse().unwrap_or(u64::MAX),
                });
            }
            None => return Err(bad(1, "\"simdex-index 1\"", first)),
        }
        check_seal(body, crc_line, "manifest")?;
        let lines: Vec<&str> = body.lines().collect();
        let field = |i: usize, name: &str| -> Result<&str> {
            let l = lines.get(i).copied().unwrap_or("");
            l.strip_prefix(name)
                .and_then(|r| r.strip_prefix(' '))
                .ok_or_else(|| bad(i + 1, &format!("{name} <value>"), l))
        };
        let num = |i: usize, name: &str| -> Result<u64> {
            let v = field(i, name)?;
            v.parse()
                .map_err(|_| bad(i + 1, &format!("{name} <integer>"), lines[i]))
        };
        // Every number is checked into its type: a value that does not fit is corruption,
        // never silently truncated.
        let small = |i: usize, name: &str, max: u64| -> Result<u64> {
            let v = num(i, name)?;
            if v > max {
                return Err(bad(i + 1, &format!("{name} at most {max}"), lines[i]));
            }
            Ok(v)
        };
        let name = field(1, "design")?.to_string();
        let k = small(2, "k", crate::design::MAX_K as u64)? as u32;
        let radius = small(3, "radius", k as u64)? as u32;
        let keys = num(4, "keys")?;
        let codec = small(5, "codec", u32::MAX as u64)? as u32;
        let block_size = small(6, "block-size", u32::MAX as u64)? as u32;
        let count = small(7, "tables", crate::design::MAX_TABLES as u64)? as usize;
        if lines.len() != 8 + count {
            return Err(bad(
                8,
                &format!("{count} table lines"),
                &format!("{} lines", lines.len() - 8),
            ));
        }
        let mut tables = Vec::with_capacity(count);
        let mut entries = Vec::with_capacity(count);
        for i in 0..count {
            let ln = 9 + i;
            let l = lines[8 + i];
            let parts: Vec<&str> = l.split(' ').collect();
            let expected = "table <i> <prefix bits> <file> <bytes> <xxh3-64> <permutation>";
            if parts.len() != 7 || parts[0] != "table" || parts[1] != i.to_string() {
                return Err(bad(ln, expected, l));
            }
            let prefix_bits: u32 = parts[2].parse().map_err(|_| bad(ln, expected, l))?;
            let file = parts[3].to_string();
            if file.is_empty() || file.contains('/') || file.contains('\\') || file.starts_with('.')
            {
                return Err(bad(ln, "a plain file name", &file));
            }
            let bytes: u64 = parts[4].parse().map_err(|_| bad(ln, expected, l))?;
            if parts[5].len() != 16 {
                return Err(bad(ln, expected, l));
            }
            let xxh3 = u64::from_str_radix(parts[5], 16).map_err(|_| bad(ln, expected, l))?;
            let perm: Vec<u8> = parts[6]
                .split(',')
                .map(|x| x.parse::<u8>())
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| bad(ln, "64 comma-separated bit positions", parts[6]))?;
            let arr: [u8; 64] = perm
                .try_into()
                .map_err(|_| bad(ln, "64 comma-separated bit positions", parts[6]))?;
            let permutation =
                Permutation::new(arr).map_err(|e| bad(ln, "a permutation", &e.to_string()))?;
            tables.push(TableDesign {
                permutation,
                prefix_bits,
            });
            entries.push(TableEntry { file, bytes, xxh3 });
        }
        let design = Design::from_tables(name, k, radius, tables)
            .map_err(|e| bad(2, "a valid design", &e.to_string()))?;
        design
            .check_exact()
            .map_err(|e| bad(2, "a design exact for its k", &e.to_string()))?;
        Ok(Manifest {
            design,
            keys,
            codec,
            block_size,
            tables: entries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        let design = Design::by_name("10", 3).unwrap();
        let tables = (0..10)
            .map(|i| TableEntry {
                file: format!("table-{i:02}.sxt"),
                bytes: 1000 + i,
                xxh3: 0xdead_beef_0bad_f00d ^ i,
            })
            .collect();
        Manifest {
            design,
            keys: 12345,
            codec: 1,
            block_size: 1024,
            tables,
        }
    }

    #[test]
    fn round_trip() {
        let m = sample();
        assert_eq!(Manifest::decode(m.encode().as_bytes()).unwrap(), m);
    }

    #[test]
    fn every_edit_and_truncation_is_refused() {
        let text = sample().encode().into_bytes();
        for len in 0..text.len() {
            assert!(
                Manifest::decode(&text[..len]).is_err(),
                "truncated at {len}"
            );
        }
        for i in 0..text.len() {
            let mut t = text.clone();
            t[i] ^= 0x01;
            assert!(Manifest::decode(&t).is_err(), "flip at {i}");
        }
    }
}
