//! Sealed text: a small text file (MANIFEST, the store's CURRENT) whose last line is
//! `crc32 XXXXXXXX`, the salted crc32 (offset 0) of every byte before it, followed by a newline.

use std::fmt::Write as _;

use crate::error::{Error, Result};

/// Seal a text file: append the line `crc32 XXXXXXXX`, the salted crc (offset 0) of every byte
/// before it. MANIFEST and the store's CURRENT are sealed text.
pub fn seal(mut body: String) -> String {
    let crc = crate::checksum::crc_at(0, body.as_bytes());
    let _ = writeln!(body, "crc32 {crc:08x}");
    body
}

/// Split sealed text into (body, crc line), checking UTF-8 and that there is a line before the
/// crc line; `what` names the file in errors. [`check_seal`] checks the crc line.
pub fn split_sealed<'a>(bytes: &'a [u8], what: &str) -> Result<(&'a str, &'a str)> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Error::corrupt(what, e.valid_up_to() as u64, "UTF-8 text", "invalid UTF-8"))?;
    let body_end = text
        .trim_end_matches('\n')
        .rfind('\n')
        .map(|i| i + 1)
        .ok_or_else(|| Error::corrupt(what, 0, "several lines", format!("{text:?}")))?;
    Ok(text.split_at(body_end))
}

/// Check the crc line of sealed text: the body's crc and a final newline (a file cut short
/// loses it).
pub fn check_seal(body: &str, crc_line: &str, what: &str) -> Result<()> {
    let actual = crate::checksum::crc_at(0, body.as_bytes());
    if crc_line != format!("crc32 {actual:08x}\n") {
        return Err(Error::corrupt(
            format!("{what} crc32"),
            body.len() as u64,
            format!("\"crc32 {actual:08x}\" and a final newline"),
            format!("{crc_line:?}"),
        ));
    }
    Ok(())
}
