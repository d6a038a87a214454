//! The decode side of a code: [`DecodeTable`], the table-driven decoder every reader uses (a
//! first level over the next [`PRIMARY_BITS`] stream bits, the vectorized decoder's over
//! [`LANE_BITS`]), the layouts of their entries, and the process-wide registry through which
//! the tables of one code share one decode table.

use super::{Code, Lengths, NUM_SYMBOLS};

/// Index width of a decode table's first level: codes up to this long (nearly every key's)
/// decode with one lookup in 2^8 entries (1 KiB).
///
/// Why two levels: a query decodes blocks of ten tables or more round-robin, each with its own
/// code. Full tables of 2^12 entries (16 KiB each, 160 KiB for ten) do not stay in L1, so every
/// key's lookup, which sits on the decoder's serial chain, waited for L2. Ten first levels take
/// 10 KiB. The h values of sorted keys crowd around log2(n) (the gap between neighbours is
/// nearly exponential), so codes longer than 8 bits carry a few percent of keys at most.
pub const PRIMARY_BITS: u32 = 8;

/// Index width of the first level the vectorized decoder (`table::lanes`) reads: 2^10 entries
/// (2 KiB: [`lane_entry`]). It decodes four probes per step and sends every code longer than
/// its first level to a scalar step (a mispredicted branch and the general rule); at 1M keys
/// per table 1.1% of deltas have codes longer than 8 bits, 0.3% longer than 10.
pub const LANE_BITS: u32 = 10;

/// Stream bits the vectorized decoder reads per delta (one 8-byte load at a byte, shifted to
/// the bit): a delta of up to this many bits (code and suffix) decodes from its window.
pub(crate) const LANE_WINDOW_BITS: u32 = 57;

/// A first-level entry that sends the lookup to the full table (a code longer than
/// [`PRIMARY_BITS`] starts with these bits).
pub(crate) const LONG: u32 = entry::LONG;

/// The layout of a decode-table entry: `len | sym << 8 | total << 16` (the code length, the
/// symbol, and the bits the whole delta takes), [`LONG`](entry::LONG) in the first level where
/// the code goes on, 0 where no code starts. Named here, where entries are built, for the one
/// reader that takes entries apart itself: the vectorized decoder (`table::lanes`), which
/// splits four at a time with vector shifts.
pub(crate) mod entry {
    /// Mask of the code length (the low byte).
    pub(crate) const LEN_MASK: u32 = 0xFF;
    /// Shift and mask of the symbol.
    pub(crate) const SYM_SHIFT: i32 = 8;
    pub(crate) const SYM_MASK: u32 = 0xFF;
    /// Shift of the whole delta's length in bits (code and suffix; the top bits).
    pub(crate) const TOTAL_SHIFT: i32 = 16;
    /// A first-level entry whose code is longer than the first level.
    pub(crate) const LONG: u32 = 1 << 31;

    /// The entry of a code of `len` bits for `sym`, whose delta takes `total` bits.
    pub(crate) const fn pack(len: u32, sym: u32, total: u32) -> u32 {
        len | sym << SYM_SHIFT | total << TOTAL_SHIFT
    }
}

/// The layout of an entry of the lanes' first level ([`DecodeTable::lane_primary`]): the same
/// three fields as [`entry`]'s in 16 bits, `len | sym << 4 | total << 10` (a code of at most
/// [`LANE_BITS`] bits, a symbol below 64, a delta of at most [`LANE_WINDOW_BITS`]), and
/// [`LONG`](lane_entry::LONG) where the lanes take the scalar rule. Half the bytes of a u32
/// entry: a query looks up in every table's code, and the first levels stay in L1 beside the
/// blocks' lines.
pub(crate) mod lane_entry {
    /// Mask of the code length (the low 4 bits).
    pub(crate) const LEN_MASK: u32 = 0xF;
    /// Shift and mask of the symbol.
    pub(crate) const SYM_SHIFT: i32 = 4;
    pub(crate) const SYM_MASK: u32 = 0x3F;
    /// Shift of the whole delta's length in bits (the top 6 bits).
    pub(crate) const TOTAL_SHIFT: i32 = 10;
    /// The lanes leave this entry to the scalar rule: above every entry they decode, whose
    /// total is at most [`LANE_WINDOW_BITS`](super::LANE_WINDOW_BITS) < 63.
    pub(crate) const LONG: u16 = u16::MAX;

    /// The entry of a code of `len` bits for `sym`, whose delta takes `total` bits (each
    /// within its field).
    pub(crate) const fn pack(len: u32, sym: u32, total: u32) -> u16 {
        (len | sym << SYM_SHIFT | total << TOTAL_SHIFT) as u16
    }
}

/// Table-driven decoder: the next [`DecodeTable::bits`] stream bits index an entry holding the
/// symbol and its code length, through a small first level (see [`PRIMARY_BITS`]).
#[derive(Debug, Clone)]
pub struct DecodeTable {
    bits: u32,
    /// `63 - bits`, so an index is `(window >> 1) >> shift` (no overflow at bits = 0).
    shift: u32,
    /// The first level: for each value of the next [`PRIMARY_BITS`] stream bits, the entry all
    /// its continuations share in `entries`, or [`LONG`] if they differ. A fixed-size array, so
    /// that indexing it by a byte needs no bounds check.
    primary: Box<[u32; 1 << PRIMARY_BITS]>,
    /// The vectorized decoder's first level, over the next [`LANE_BITS`] stream bits
    /// ([`lane_primary`](Self::lane_primary)).
    lane_primary: Box<[u16; 1 << LANE_BITS]>,
    /// `len | sym << 8 | (len + suffix_bits(sym)) << 16`: the code length, the symbol, and the
    /// bits a whole delta with this symbol takes (precomputed to shorten the decoder's dependency
    /// chain). 0 marks a bit pattern that starts no code (corrupt data).
    entries: Vec<u32>,
}

/// The decode tables of the codes open in this process, by codec and code lengths, held
/// weakly (a table no reader holds is dropped with its last reader).
///
/// Why: the tables of one index often share a code. On uniform keys 10M and 100M keys give
/// design 10's ten tables 4–5 distinct codes, and a 60M-key m6c2r0 index's 15 tables 6. A
/// query decodes in every table, and each lookup reads the first level of its table's
/// code: ten 4 KiB first levels took most of a 48 KiB L1 cache that the blocks' lines stream
/// through. Shared (and in 16-bit entries, [`lane_entry`]), a query of that 60M index misses
/// L1 142 times instead of 327 (cachegrind), at 100M 71 times instead of 117
/// (docs/log/benchmarks.md, “one decode table per code, in 16-bit entries”).
type Shared = Vec<(u8, Lengths, std::sync::Weak<DecodeTable>)>;
static SHARED: std::sync::Mutex<Shared> = std::sync::Mutex::new(Vec::new());

/// `f` on the registry, unless it stays locked past a bounded wait: then `None`. Never
/// blocks for good: a child forked while another thread of its parent held the lock would
/// otherwise wait forever (it inherits the lock, not its holder), and sharing only saves
/// cache lines.
fn with_shared<T>(f: impl FnOnce(&mut Shared) -> T) -> Option<T> {
    use std::sync::TryLockError;
    for _ in 0..SHARED_TRIES {
        match SHARED.try_lock() {
            Ok(mut held) => return Some(f(&mut held)),
            // A panic elsewhere while the lock was held leaves the list as it was: usable.
            Err(TryLockError::Poisoned(e)) => return Some(f(&mut e.into_inner())),
            Err(TryLockError::WouldBlock) => std::thread::yield_now(),
        }
    }
    None
}

/// Attempts at the registry's lock: a holder keeps it for a scan of a few entries.
const SHARED_TRIES: usize = 10_000;

impl DecodeTable {
    /// [`new`](Self::new), shared with every open reader of the same `codec` (a tag: codecs
    /// differ in `suffix_bits`) and code (its lengths).
    pub(crate) fn shared(
        codec: u8,
        code: &Code,
        suffix_bits: impl Fn(u32) -> u32,
    ) -> std::sync::Arc<DecodeTable> {
        let lengths = code.lengths();
        let find = |held: &mut Shared| {
            held.retain(|(_, _, t)| t.strong_count() > 0);
            held.iter()
                .find(|(c, l, _)| *c == codec && l == lengths)
                .and_then(|(_, _, t)| t.upgrade())
        };
        if let Some(Some(t)) = with_shared(find) {
            return t;
        }
        // Built outside the lock; kept unless another thread registered the code meanwhile.
        let t = std::sync::Arc::new(DecodeTable::new(code, suffix_bits));
        with_shared(|held| match find(held) {
            Some(other) => other,
            None => {
                held.push((codec, *lengths, std::sync::Arc::downgrade(&t)));
                t.clone()
            }
        })
        .unwrap_or(t)
    }

    /// The decode table of `code` (2^max_len entries); `suffix_bits(symbol)` is how many raw
    /// bits follow each symbol ([`crate::codec::Codec::suffix_bits`]).
    pub fn new(code: &Code, suffix_bits: impl Fn(u32) -> u32) -> DecodeTable {
        let bits = code.max_len();
        let mut entries = vec![0u32; 1usize << bits];
        for sym in 0..NUM_SYMBOLS {
            let (c, l) = code.encode(sym);
            if l == 0 {
                continue;
            }
            let shift = bits - l;
            let start = (c as usize) << shift;
            let total = l + suffix_bits(sym as u32);
            entries[start..start + (1usize << shift)].fill(entry::pack(l, sym as u32, total));
        }
        let mut primary = Box::new([0u32; 1 << PRIMARY_BITS]);
        first_level(&entries, bits, &mut primary[..]);
        let mut wide = [0u32; 1 << LANE_BITS];
        first_level(&entries, bits, &mut wide[..]);
        // Everything the lanes leave to the scalar rule is LONG, so that one compare finds it:
        // bits that start no code, codes that go on, and deltas wider than the window.
        let lane_primary = Box::new(wide.map(|e| {
            let (len, sym, total) = (
                e & entry::LEN_MASK,
                (e >> entry::SYM_SHIFT) & entry::SYM_MASK,
                e >> entry::TOTAL_SHIFT,
            );
            if e == 0 || e == LONG || total > LANE_WINDOW_BITS {
                lane_entry::LONG
            } else {
                // A first-level code has at most LANE_BITS bits; a symbol is below 64.
                debug_assert!(len <= lane_entry::LEN_MASK && sym <= lane_entry::SYM_MASK);
                lane_entry::pack(len, sym, total)
            }
        }));
        DecodeTable {
            bits,
            shift: 63 - bits,
            primary,
            lane_primary,
            entries,
        }
    }

    /// Index width in bits (the longest code length; 0 for an empty code).
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Decode the symbol at the top of `window` (stream bits, left-aligned): `(symbol, length)`,
    /// or `None` if the bits start no code.
    #[inline(always)]
    pub fn decode(&self, window: u64) -> Option<(u32, u32)> {
        // `>> 1 >> (63 - bits)` is `>> (64 - bits)` without the overflow at bits = 0.
        let (h, l, _) = self.decode_delta(window)?;
        Some((h, l))
    }

    /// As [`decode`](Self::decode), plus the length of the whole delta (code and suffix).
    #[inline(always)]
    pub fn decode_delta(&self, window: u64) -> Option<(u32, u32, u32)> {
        // Second-level indexes are below its length by construction; `get` keeps that a
        // checked fact.
        let mut e = self.primary[(window >> (64 - PRIMARY_BITS)) as usize];
        if e == LONG {
            let i = ((window >> 1) >> self.shift) as usize;
            e = self.entries.get(i).copied().unwrap_or(0);
        }
        if e == 0 {
            None
        } else {
            Some((
                (e >> entry::SYM_SHIFT) & entry::SYM_MASK,
                e & entry::LEN_MASK,
                e >> entry::TOTAL_SHIFT,
            ))
        }
    }

    /// The vectorized decoder's first level: entries for the next [`LANE_BITS`] stream bits
    /// ([`lane_entry`]: `len | sym << 4 | total << 10`), [`lane_entry::LONG`] where the lanes
    /// take the scalar rule: where the code goes on, where no code starts, and where the delta
    /// is wider than [`LANE_WINDOW_BITS`]. Every other entry is at most
    /// `lane_entry::pack(0xF, 0x3F, LANE_WINDOW_BITS)`.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // used by `table::lanes`
    #[inline]
    pub(crate) fn lane_primary(&self) -> &[u16; 1 << LANE_BITS] {
        &self.lane_primary
    }

    /// The share of stream positions (random bits, so each code weighs 2^-length, about its
    /// symbol's frequency) whose code the lanes' first level decodes and whose whole delta
    /// takes at most `bits` bits: how often a decoder that handles only those stays on its fast
    /// path.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // used by `table::lanes`
    pub(crate) fn short_share(&self, bits: u32) -> f64 {
        let fast = self
            .lane_primary
            .iter()
            .filter(|&&e| {
                e != lane_entry::LONG && (e as u32) >> lane_entry::TOTAL_SHIFT <= bits
            })
            .count();
        fast as f64 / self.lane_primary.len() as f64
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        (self.primary.len() + self.entries.capacity()) * 4 + self.lane_primary.len() * 2
    }
}

/// Fill a first level of `level.len()` (a power of two) entries from the full table `entries`
/// (of 2^`bits`): each slot holds the entry all continuations of its index share, or [`LONG`]
/// if they differ.
fn first_level(entries: &[u32], bits: u32, level: &mut [u32]) {
    let width = level.len().trailing_zeros();
    for (p, slot) in level.iter_mut().enumerate() {
        // The entries whose index starts with the `width` bits `p` (one entry, shared by
        // several values of `p`, when the code is shorter than `width` bits).
        let span = if bits >= width {
            let w = 1usize << (bits - width);
            &entries[p * w..(p + 1) * w]
        } else {
            let i = p >> (width - bits);
            &entries[i..i + 1]
        };
        *slot = if span.iter().all(|&e| e == span[0]) {
            span[0]
        } else {
            LONG
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_of_one_code_share_its_decode_table() {
        // Codes of the top symbols only, and a codec tag no table has: no other test's table
        // holds them.
        let mut l = [0u8; 64];
        l[56..].copy_from_slice(&[3, 3, 3, 3, 3, 2, 4, 4]);
        let mut other = [0u8; 64];
        other[60..].copy_from_slice(&[2, 2, 2, 2]);
        let (c, o) = (Code::from_lengths(&l).unwrap(), Code::from_lengths(&other).unwrap());
        let a = DecodeTable::shared(0, &c, |s| 63 - s);
        let b = DecodeTable::shared(0, &c, |s| 63 - s);
        assert!(std::sync::Arc::ptr_eq(&a, &b));
        // Another codec's, or another code's, is its own.
        let g = DecodeTable::shared(200, &c, |s| s);
        let d = DecodeTable::shared(0, &o, |s| 63 - s);
        assert!(!std::sync::Arc::ptr_eq(&a, &g) && !std::sync::Arc::ptr_eq(&a, &d));
        assert_eq!(d.lane_primary(), DecodeTable::new(&o, |s| 63 - s).lane_primary());
        // Held weakly: dropped with its last reader, then built anew.
        drop(g);
        let again = DecodeTable::shared(200, &c, |s| s);
        assert_eq!(std::sync::Arc::strong_count(&again), 1);
        // A registry locked for good (as a child forked while another thread held it finds
        // it) costs the sharing, never the open.
        let held = SHARED.lock().unwrap();
        let alone = DecodeTable::shared(0, &c, |s| 63 - s);
        drop(held);
        assert!(!std::sync::Arc::ptr_eq(&a, &alone));
        assert_eq!(alone.lane_primary(), a.lane_primary());
    }
}
