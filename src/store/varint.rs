//! The varints of the id and document maps (`format-spec/store.md`): LEB128, least
//! significant group first, at most 10 bytes, minimal (no last byte of 0 after others).

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decode a varint at `*pos`, advancing it; `None` when truncated, longer than 10 bytes, or
/// not minimal (a last byte of 0 after others: the writer never writes one, and a verified
/// map is exactly its writer's bytes; found by the `doc_map` fuzz target).
///
/// Most varints end within the 8 bytes at `*pos` (an id map's fingerprint deltas take about
/// 7): those are decoded from one load, their 7-bit groups packed together in three steps,
/// where the loop below took a branch a byte (an id lookup decodes a few hundred).
#[inline(always)]
pub(crate) fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    match in_window(buf, *pos) {
        Window::Ends(w, len) => {
            let x = w & (u64::MAX >> (64 - 8 * len)) & 0x7f7f_7f7f_7f7f_7f7f;
            let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
            let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
            let x = (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4);
            *pos += len as usize;
            Some(x)
        }
        Window::NotMinimal => None,
        Window::Beyond => get_varint_bytewise(buf, pos),
    }
}

/// Pass over a varint at `*pos` as [`get_varint`] would read it (`None` where it would).
#[inline(always)]
pub(crate) fn skip_varint(buf: &[u8], pos: &mut usize) -> Option<()> {
    match in_window(buf, *pos) {
        Window::Ends(_, len) => {
            *pos += len as usize;
            Some(())
        }
        Window::NotMinimal => None,
        Window::Beyond => get_varint_bytewise(buf, pos).map(|_| ()),
    }
}

/// What the 8 bytes at a varint's start say of it: the one rule of the one-load decoders.
enum Window {
    /// It ends within them: the 8 bytes (little-endian) and its length.
    Ends(u64, u32),
    /// It ends within them, in a last byte of 0 after others: not minimal.
    NotMinimal,
    /// It does not end within them, or fewer than 8 bytes are left: read it byte by byte.
    Beyond,
}

#[inline(always)]
fn in_window(buf: &[u8], pos: usize) -> Window {
    let Some(w) = buf.get(pos..pos + 8) else {
        return Window::Beyond;
    };
    let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
    let ends = !w & 0x8080_8080_8080_8080;
    if ends == 0 {
        return Window::Beyond;
    }
    let len = ends.trailing_zeros() / 8 + 1;
    if len > 1 && (w >> (8 * (len - 1))) as u8 == 0 {
        return Window::NotMinimal;
    }
    Window::Ends(w, len)
}

/// [`get_varint`] a byte at a time: varints of 9 or 10 bytes, and the last bytes of a buffer.
fn get_varint_bytewise(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = *buf.get(*pos)?;
        *pos += 1;
        if (i == 9 && b > 1) || (i > 0 && b == 0) {
            return None;
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-load varint decoder reads what the bytewise one reads, where it ends and where
    /// it fails, at every position of every length, for canonical, padded (non-minimal),
    /// over-long and truncated varints.
    #[test]
    fn varints_decode_as_bytewise() {
        let mut s = 3u64;
        let mut buf = Vec::new();
        for bits in 0..=64u32 {
            for _ in 0..20 {
                let v =
                    crate::sample::splitmix64(&mut s) >> (64 - bits.max(1)) >> (bits == 0) as u32;
                put_varint(&mut buf, v);
            }
        }
        // Non-minimal forms (continuation bytes of zero bits), an 11-byte run, a 10th byte
        // above 1, and random bytes.
        buf.extend([
            0x80, 0x80, 0x00, 0xff, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00,
        ]);
        buf.extend([0x80; 11]);
        buf.extend([
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00,
        ]);
        buf.extend((0..400).map(|_| crate::sample::splitmix64(&mut s) as u8));
        for end in [buf.len(), buf.len() - 3, 5, 0] {
            let b = &buf[..end];
            for at in 0..=b.len() {
                let (mut p, mut q) = (at, at);
                let got = get_varint(b, &mut p);
                assert_eq!(got, get_varint_bytewise(b, &mut q), "at {at}");
                let mut r = at;
                assert_eq!(skip_varint(b, &mut r), got.map(|_| ()), "skip at {at}");
                // Where a varint is read, all three end where it does (after `None`, the
                // position is not used).
                if got.is_some() {
                    assert_eq!((p, r), (q, q), "at {at} of {end}");
                }
            }
        }
        // A value written longer than it needs (a last byte of 0) is refused, whatever the
        // room after it; the 10-byte form of a value above 2^63 ends in 1 and is read.
        for bad in [
            &[0xad, 0x00][..],
            &[0x80, 0x00, 7, 7, 7, 7, 7, 7, 7],
            &[0xff, 0x80, 0x00],
        ] {
            for f in [get_varint, get_varint_bytewise] {
                assert_eq!(f(bad, &mut 0), None, "{bad:?}");
            }
            assert_eq!(skip_varint(bad, &mut 0), None, "{bad:?}");
        }
        assert_eq!(get_varint(&[0x2d], &mut 0), Some(45));
        let (mut p, mut all) = (0, Vec::new());
        let mut vals = Vec::new();
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            1 << 55,
            (1 << 56) - 1,
            1 << 56,
            u64::MAX,
        ] {
            put_varint(&mut all, v);
            vals.push(v);
        }
        for v in vals {
            assert_eq!(get_varint(&all, &mut p), Some(v));
        }
        assert_eq!(p, all.len());
    }

    #[test]
    fn varints_round_trip_and_reject_overlong() {
        for v in [0u64, 1, 127, 128, 300, u64::MAX >> 1, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            let mut pos = 0;
            assert_eq!(get_varint(&b, &mut pos), Some(v));
            assert_eq!(pos, b.len());
        }
        let mut pos = 0;
        assert_eq!(get_varint(&[0xff; 11], &mut pos), None);
        let mut pos = 0;
        assert_eq!(get_varint(&[0x80], &mut pos), None);
    }
}
