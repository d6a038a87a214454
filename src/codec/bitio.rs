//! MSB-first bit I/O.
//!
//! ```text
//!  byte 0                  byte 1
//!  b7 b6 b5 b4 b3 b2 b1 b0 b7 b6 ...     stream bit 0 is the most significant bit of byte 0
//!  s0 s1 s2 s3 s4 s5 s6 s7 s8 s9 ...
//! ```
//!
//! A value of `n` bits is written most significant bit first, so reading a value back is a
//! big-endian load and a shift. The reader side is a free function over a byte slice rather than
//! a stateful reader: the block decoder keeps its own bit position and the hot loop stays simple.

/// Appends bit fields, most significant bit first, to a byte vector.
#[derive(Debug, Default, Clone)]
pub struct BitWriter {
    out: Vec<u8>,
    acc: u128,
    nbits: u32,
}

impl BitWriter {
    /// An empty writer.
    pub fn new() -> BitWriter {
        BitWriter::default()
    }

    /// Append the low `n` bits of `value` (`n <= 64`; bits of `value` above `n` must be zero).
    #[inline]
    pub fn write(&mut self, value: u64, n: u32) {
        debug_assert!(n <= 64);
        debug_assert!(n == 64 || value >> n == 0);
        self.acc = (self.acc << n) | value as u128;
        self.nbits += n;
        while self.nbits >= 8 {
            self.nbits -= 8;
            self.out.push((self.acc >> self.nbits) as u8);
        }
        self.acc &= (1u128 << self.nbits) - 1;
    }

    /// Number of bits written so far.
    pub fn bit_len(&self) -> u64 {
        self.out.len() as u64 * 8 + self.nbits as u64
    }

    /// Pad the last partial byte with zero bits and return the bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.pad();
        self.out
    }

    /// Pad the last partial byte with zero bits, copy the bytes to the front of `dst` (which
    /// must be long enough) and start over empty, keeping the allocation.
    pub fn drain_into(&mut self, dst: &mut [u8]) {
        self.pad();
        dst[..self.out.len()].copy_from_slice(&self.out);
        self.out.clear();
    }

    fn pad(&mut self) {
        if self.nbits > 0 {
            self.out.push((self.acc << (8 - self.nbits)) as u8);
            self.acc = 0;
            self.nbits = 0;
        }
    }
}

/// The 64 bits of `data` starting at byte `byte`, big-endian; bytes past the end read as zero.
#[inline(always)]
pub fn load_be(data: &[u8], byte: usize) -> u64 {
    match data.get(byte..byte + 8) {
        Some(s) => u64::from_be_bytes(s.try_into().unwrap()),
        None => load_be_tail(data, byte),
    }
}

#[cold]
fn load_be_tail(data: &[u8], byte: usize) -> u64 {
    let mut b = [0u8; 8];
    if byte < data.len() {
        let avail = &data[byte..];
        b[..avail.len()].copy_from_slice(avail);
    }
    u64::from_be_bytes(b)
}

/// The stream bits `pos..pos+64` of `data`, left-aligned. At least the top 57 bits are the
/// stream's (the rest are zero); bits past the end of `data` read as zero.
#[inline(always)]
pub fn peek(data: &[u8], pos: u64) -> u64 {
    load_be(data, (pos >> 3) as usize) << (pos & 7)
}

/// Read `n <= 64` bits at bit position `pos` as an unsigned value.
#[inline]
pub fn read(data: &[u8], pos: u64, n: u32) -> u64 {
    if n <= 57 {
        // `>> 1 >> (63 - n)` is `>> (64 - n)` without the overflow at n = 0.
        (peek(data, pos) >> 1) >> (63 - n)
    } else {
        let hi = read(data, pos, n - 32);
        (hi << 32) | read(data, pos + (n - 32) as u64, 32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_fields() {
        let fields: Vec<(u64, u32)> = (0..500u64)
            .map(|i| {
                let n = (i * 7 % 65) as u32;
                let v = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                (if n == 64 { v } else { v & ((1u64 << n) - 1) }, n)
            })
            .collect();
        let mut w = BitWriter::new();
        for &(v, n) in &fields {
            w.write(v, n);
        }
        let total = w.bit_len();
        let bytes = w.finish();
        assert_eq!(bytes.len() as u64, total.div_ceil(8));
        let mut pos = 0;
        for &(v, n) in &fields {
            assert_eq!(read(&bytes, pos, n), v, "field at bit {pos} width {n}");
            pos += n as u64;
        }
    }

    #[test]
    fn msb_first_layout() {
        let mut w = BitWriter::new();
        w.write(0b1, 1);
        w.write(0b011, 3);
        w.write(0b1, 1);
        assert_eq!(w.finish(), vec![0b1011_1000]);
    }

    #[test]
    fn reads_past_end_are_zero() {
        assert_eq!(peek(&[0xFF], 0), 0xFF00_0000_0000_0000);
        assert_eq!(read(&[0xFF], 4, 8), 0xF0);
        assert_eq!(read(&[], 100, 64), 0);
    }
}
