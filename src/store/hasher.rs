//! The hasher of the store's in-memory maps of u64 keys (the delta's pairs, documents and
//! prefix shingles; a call's new documents): one folded multiply by a per-process random key.
//! The standard library's SipHash was a tenth of an exact ingest's write step; an unkeyed
//! multiply would let crafted ids or texts pile keys into one bucket.

use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// A map keyed by u64.
pub(crate) type FastMap<V> = std::collections::HashMap<u64, V, Seeded>;
/// A set of u64.
pub(crate) type FastSet = std::collections::HashSet<u64, Seeded>;

/// Builds [`SeededHasher`]s with the process's key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seeded(u64);

impl Default for Seeded {
    fn default() -> Seeded {
        static KEY: OnceLock<u64> = OnceLock::new();
        Seeded(*KEY.get_or_init(|| {
            std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64) | 1
        }))
    }
}

impl BuildHasher for Seeded {
    type Hasher = SeededHasher;
    fn build_hasher(&self) -> SeededHasher {
        SeededHasher(self.0)
    }
}

/// See the module docs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SeededHasher(u64);

fn fold(a: u64, b: u64) -> u64 {
    let m = u128::from(a) * u128::from(b);
    (m as u64) ^ ((m >> 64) as u64)
}

impl Hasher for SeededHasher {
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = fold(self.0 ^ x, 0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        fold(self.0, 0xff51_afd7_ed55_8ccd)
    }
}
