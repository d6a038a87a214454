//! The canonical, length-limited Huffman code over the 64 values of h.
//!
//! A table stores only the code *lengths* (one byte per symbol, `format-spec/table.md`,
//! "Huffman code"); the codes themselves follow from the lengths by the canonical rule of
//! DEFLATE (RFC 1951, 3.2.2): shorter codes sort first, equal lengths in symbol order.
//!
//! * Lengths are built with package-merge (Larmore and Hirschberg), which gives the optimal
//!   code under a length limit. The writer limits codes to [`WRITER_MAX_CODE_LEN`] = 12 bits so
//!   the whole decode table is 4096 four-byte entries (16 KiB), looked up through a first level
//!   of 256 (1 KiB, see [`PRIMARY_BITS`]); readers accept the format's limit of
//!   [`MAX_CODE_LEN`] = 16.
//! * Decoding is one lookup (two for a code over 8 bits): the next stream bits index a table
//!   whose entry holds the symbol and its code length ([`DecodeTable`]). `huffman-compress`'s
//!   tree walk measured 23–47 ns per symbol here against ~4 ns for a table lookup, so that crate
//!   is used only in tests, as an independent check that package-merge finds optimal lengths.
//! * [`reference_decode`] is the slow, obviously correct twin: it reads one bit at a time and
//!   compares against every symbol's (length, code). Tests check the two agree.

use super::bitio;

/// Number of symbols: h takes the values 0..=63.
pub const NUM_SYMBOLS: usize = 64;
/// The longest code length a reader must accept.
pub const MAX_CODE_LEN: u32 = 16;
/// The longest code this writer produces.
pub const WRITER_MAX_CODE_LEN: u32 = 12;

/// Code lengths, one per symbol; 0 means the symbol has no code.
pub type Lengths = [u8; NUM_SYMBOLS];

/// A canonical Huffman code: lengths plus the codes they imply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Code {
    lengths: Lengths,
    codes: [u16; NUM_SYMBOLS],
}

impl Code {
    /// The code for `lengths`, or a description of why the lengths are not a valid code.
    ///
    /// Valid: every length is at most [`MAX_CODE_LEN`], and either no symbol has a code, exactly
    /// one symbol has length 1, or the lengths form a complete prefix code (Kraft sum exactly 1).
    pub fn from_lengths(lengths: &Lengths) -> Result<Code, String> {
        let mut kraft: u64 = 0; // in units of 2^-MAX_CODE_LEN
        let mut used = 0;
        for (sym, &l) in lengths.iter().enumerate() {
            if l as u32 > MAX_CODE_LEN {
                return Err(format!(
                    "code length {l} for h={sym} exceeds {MAX_CODE_LEN}"
                ));
            }
            if l > 0 {
                used += 1;
                kraft += 1u64 << (MAX_CODE_LEN - l as u32);
            }
        }
        let full = 1u64 << MAX_CODE_LEN;
        let ok = match used {
            0 => true,
            1 => kraft == full / 2,
            _ => kraft == full,
        };
        if !ok {
            return Err(format!(
                "code lengths are not a complete prefix code (Kraft sum {kraft}/{full} over {used} symbols)"
            ));
        }
        Ok(Code {
            lengths: *lengths,
            codes: canonical_codes(lengths),
        })
    }

    /// The optimal code for `freqs` with no code longer than `limit` bits.
    pub fn from_frequencies(freqs: &[u64; NUM_SYMBOLS], limit: u32) -> Code {
        let lengths = package_merge(freqs, limit);
        Code::from_lengths(&lengths).expect("package-merge yields a complete code")
    }

    /// The code lengths.
    pub fn lengths(&self) -> &Lengths {
        &self.lengths
    }

    /// The code of `sym` and its length (length 0: the symbol has no code).
    #[inline]
    pub fn encode(&self, sym: usize) -> (u64, u32) {
        (self.codes[sym] as u64, self.lengths[sym] as u32)
    }

    /// The longest code length in use (0 for an empty code).
    pub fn max_len(&self) -> u32 {
        self.lengths.iter().copied().max().unwrap_or(0) as u32
    }

    /// Total bits to code `freqs` with this code (symbols without a code count as `u64::MAX`).
    pub fn cost(&self, freqs: &[u64; NUM_SYMBOLS]) -> u64 {
        freqs
            .iter()
            .zip(&self.lengths)
            .map(|(&f, &l)| match (f, l) {
                (0, _) => 0,
                (_, 0) => u64::MAX,
                _ => f * l as u64,
            })
            .fold(0u64, |a, b| a.saturating_add(b))
    }
}

/// Canonical code assignment (RFC 1951, 3.2.2).
fn canonical_codes(lengths: &Lengths) -> [u16; NUM_SYMBOLS] {
    let mut bl_count = [0u32; MAX_CODE_LEN as usize + 1];
    for &l in lengths {
        if l > 0 {
            bl_count[l as usize] += 1;
        }
    }
    let mut next_code = [0u32; MAX_CODE_LEN as usize + 2];
    let mut code = 0u32;
    for bits in 1..=MAX_CODE_LEN as usize {
        code = (code + bl_count[bits - 1]) << 1;
        next_code[bits] = code;
    }
    let mut codes = [0u16; NUM_SYMBOLS];
    for (sym, &l) in lengths.iter().enumerate() {
        if l > 0 {
            codes[sym] = next_code[l as usize] as u16;
            next_code[l as usize] += 1;
        }
    }
    codes
}

/// Optimal length-limited code lengths by package-merge.
///
/// Ties are broken deterministically (by weight, then leaves before packages, then symbol), so the
/// same histogram always gives the same lengths: the golden vectors depend on it.
fn package_merge(freqs: &[u64; NUM_SYMBOLS], limit: u32) -> Lengths {
    let mut leaves: Vec<(u64, usize)> = freqs
        .iter()
        .enumerate()
        .filter(|&(_, &f)| f > 0)
        .map(|(s, &f)| (f, s))
        .collect();
    leaves.sort_unstable();
    let mut lengths = [0u8; NUM_SYMBOLS];
    match leaves.len() {
        0 => return lengths,
        1 => {
            lengths[leaves[0].1] = 1;
            return lengths;
        }
        _ => {}
    }
    assert!(
        (1usize << limit) >= leaves.len(),
        "limit {limit} too small for {} symbols",
        leaves.len()
    );
    // An item is a weight and how many times each symbol occurs in it.
    type Item = (u64, [u8; NUM_SYMBOLS]);
    let leaf_items: Vec<Item> = leaves
        .iter()
        .map(|&(w, s)| {
            let mut c = [0u8; NUM_SYMBOLS];
            c[s] = 1;
            (w, c)
        })
        .collect();
    let mut list = leaf_items.clone();
    for _ in 1..limit {
        let packages: Vec<Item> = list
            .chunks_exact(2)
            .map(|p| {
                let mut c = p[0].1;
                for (a, b) in c.iter_mut().zip(&p[1].1) {
                    *a += b;
                }
                (p[0].0 + p[1].0, c)
            })
            .collect();
        // Merge, leaves first on equal weight.
        let mut merged = Vec::with_capacity(leaf_items.len() + packages.len());
        let (mut i, mut j) = (0, 0);
        while i < leaf_items.len() || j < packages.len() {
            let take_leaf =
                j == packages.len() || (i < leaf_items.len() && leaf_items[i].0 <= packages[j].0);
            if take_leaf {
                merged.push(leaf_items[i]);
                i += 1;
            } else {
                merged.push(packages[j]);
                j += 1;
            }
        }
        list = merged;
    }
    for item in &list[..2 * leaves.len() - 2] {
        for (l, &c) in lengths.iter_mut().zip(&item.1) {
            *l += c;
        }
    }
    lengths
}

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
/// (BENCHMARKS.md, part 22).
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

/// Bit-by-bit reference decoder: the symbol whose code starts at bit `pos` of `data`, with its
/// length, or `None` if no code matches within [`MAX_CODE_LEN`] bits.
pub fn reference_decode(code: &Code, data: &[u8], pos: u64) -> Option<(u32, u32)> {
    let mut acc = 0u64;
    for len in 1..=MAX_CODE_LEN {
        acc = (acc << 1) | bitio::read(data, pos + len as u64 - 1, 1);
        for sym in 0..NUM_SYMBOLS {
            if code.encode(sym) == (acc, len) {
                return Some((sym as u32, len));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1951_example() {
        // RFC 1951, 3.2.2: lengths (3,3,3,3,3,2,4,4) give codes 010,011,100,101,110,00,1110,1111.
        let mut l = [0u8; 64];
        l[..8].copy_from_slice(&[3, 3, 3, 3, 3, 2, 4, 4]);
        // Not complete over 64 symbols? It is: 5/8 + 1/4 + 2/16 = 1.
        let c = Code::from_lengths(&l).unwrap();
        let want = [0b010, 0b011, 0b100, 0b101, 0b110, 0b00, 0b1110, 0b1111];
        for (s, &w) in want.iter().enumerate() {
            assert_eq!(c.encode(s).0, w);
        }
    }

    #[test]
    fn rejects_bad_lengths() {
        let mut l = [0u8; 64];
        l[0] = 1;
        l[1] = 1;
        l[2] = 1;
        assert!(Code::from_lengths(&l).is_err()); // oversubscribed
        let mut l = [0u8; 64];
        l[0] = 2;
        l[1] = 2;
        assert!(Code::from_lengths(&l).is_err()); // incomplete
        let mut l = [0u8; 64];
        l[5] = 2;
        assert!(Code::from_lengths(&l).is_err()); // lone symbol must have length 1
        let mut l = [0u8; 64];
        l[0] = 17;
        assert!(Code::from_lengths(&l).is_err());
        assert!(Code::from_lengths(&[0u8; 64]).is_ok());
    }

    #[test]
    fn limit_is_respected_and_code_complete() {
        // Fibonacci weights force a deep unconstrained tree.
        let mut f = [0u64; 64];
        let (mut a, mut b) = (1u64, 1u64);
        for x in f.iter_mut().take(40) {
            *x = a;
            (a, b) = (b, a + b);
        }
        for limit in [6, 8, 12, 16] {
            let c = Code::from_frequencies(&f, limit);
            assert!(c.max_len() <= limit);
            assert!(f.iter().zip(c.lengths()).all(|(&f, &l)| (f > 0) == (l > 0)));
        }
    }

    #[test]
    fn fast_and_reference_decoders_agree() {
        let mut f = [0u64; 64];
        for (i, x) in f.iter_mut().enumerate() {
            *x = (i as u64 * 2654435761) % 1000;
        }
        // A flat code (every length 6) decodes in the first level alone; skewed ones (Fibonacci
        // weights under limits of 12 and 16) send their long codes to the second.
        let (mut a, mut b) = (1u64, 1u64);
        let mut fib = [0u64; 64];
        for x in fib.iter_mut().take(30) {
            *x = a;
            (a, b) = (b, a + b);
        }
        let codes = [
            Code::from_frequencies(&f, 12),
            Code::from_frequencies(&[1; 64], 12),
            Code::from_frequencies(&fib, 12),
            Code::from_frequencies(&fib, 16),
        ];
        assert_eq!(codes[1].max_len(), 6);
        assert_eq!(codes[3].max_len(), 16);
        for code in &codes {
            agree(code);
        }
    }

    fn agree(code: &Code) {
        let table = DecodeTable::new(code, |s| 63 - s);
        let mut state = 7u64;
        let bytes: Vec<u8> = (0..4096)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 56) as u8
            })
            .collect();
        for pos in 0..(bytes.len() as u64 * 8 - 64) {
            assert_eq!(
                table.decode(bitio::peek(&bytes, pos)),
                reference_decode(code, &bytes, pos),
                "bit {pos}"
            );
        }
    }

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
