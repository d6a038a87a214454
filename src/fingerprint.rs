//! Fingerprint helpers: Hamming distance and the hex form used by every text interface.
//!
//! The text form of a fingerprint is exactly 16 hex digits, lowercase on output; input may carry
//! a `0x` prefix and either case.

/// Number of bit positions in which `a` and `b` differ.
#[inline]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// 16 lowercase hex digits.
///
/// ```
/// assert_eq!(simdex::to_hex(255), "00000000000000ff");
/// assert_eq!(simdex::parse_hex("0x00000000000000FF"), Ok(255));
/// ```
pub fn to_hex(fp: u64) -> String {
    format!("{fp:016x}")
}

/// Parse 16 hex digits, optionally prefixed by `0x`/`0X`, either case, surrounding whitespace
/// ignored. The error says what is wrong.
pub fn parse_hex(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if let Some(rest) = digits.strip_prefix('\u{feff}') {
        return Err(format!(
            "a UTF-8 byte-order mark (U+FEFF) precedes {:?}: save the file without it",
            shorten(rest)
        ));
    }
    if digits.len() != 16 {
        return Err(format!(
            "expected 16 hex digits, found {} characters in {:?}",
            digits.chars().count(),
            shorten(t)
        ));
    }
    if let Some(c) = digits.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(format!("{c:?} is not a hex digit in {:?}", shorten(t)));
    }
    u64::from_str_radix(digits, 16).map_err(|e| format!("{e} in {:?}", shorten(t)))
}

fn shorten(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(40).collect::<String>())
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_errors() {
        for x in [0u64, 1, u64::MAX, 0x0123_4567_89ab_cdef] {
            assert_eq!(parse_hex(&to_hex(x)).unwrap(), x);
        }
        assert_eq!(parse_hex(" 0xFFFFFFFFFFFFFFFF\r").unwrap(), u64::MAX);
        assert_eq!(parse_hex("0X00000000000000aB").unwrap(), 0xab);
        assert!(parse_hex("123").is_err());
        assert!(parse_hex("00000000000000000").is_err());
        assert!(parse_hex("000000000000000g").is_err());
        assert!(parse_hex("+00000000000000f").is_err());
        assert!(parse_hex("").is_err());
        assert_eq!(hamming(0, u64::MAX), 64);
        assert_eq!(hamming(0b1011, 0b0001), 2);
    }
}
