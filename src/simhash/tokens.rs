//! Text to tokens: Unicode NFKC, lowercase, UAX #29 words, and character bigrams for scripts
//! written without spaces (`format-spec/simhash.md` specifies every step).
//!
//! Punctuation and whitespace only separate tokens, they never become tokens: a document's
//! fingerprint does not change when its punctuation does (a Chinese full stop "。" replaced by a
//! comma, or removed). Scripts without spaces between words (Han, Hiragana, Katakana, Thai, Lao,
//! Khmer, Myanmar) would otherwise become one giant "word" per sentence, or one token per
//! character with no order at all; instead each maximal run of such characters, across the
//! punctuation inside it, becomes its overlapping character bigrams.

use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

/// True for characters of scripts written without spaces between words, which are tokenized as
/// character bigrams. The ranges are listed in `format-spec/simhash.md`.
pub fn is_dense(c: char) -> bool {
    matches!(c as u32,
        0x0E00..=0x0EFF       // Thai, Lao
        | 0x1000..=0x109F     // Myanmar
        | 0x1780..=0x17FF     // Khmer
        | 0x19E0..=0x19FF     // Khmer symbols
        | 0x2E80..=0x2FDF     // CJK radicals, Kangxi radicals
        | 0x3005..=0x3007     // 々 〆 〇
        | 0x3021..=0x3029     // Hangzhou numerals
        | 0x3031..=0x3035     // kana repeat marks
        | 0x3040..=0x30FF     // Hiragana, Katakana
        | 0x31F0..=0x31FF     // Katakana phonetic extensions
        | 0x3400..=0x4DBF     // CJK extension A
        | 0x4E00..=0x9FFF     // CJK unified ideographs
        | 0xF900..=0xFAFF     // CJK compatibility ideographs
        | 0xFF66..=0xFF9F     // halfwidth Katakana (NFKC maps most to fullwidth)
        | 0x20000..=0x3FFFF   // CJK extensions B..
    )
}

/// Normalize: NFKC, then full Unicode lowercase.
pub fn normalize(text: &str) -> String {
    if text.is_ascii() {
        // NFKC leaves ASCII unchanged and its lowercase is ASCII's: same result, much faster.
        return text.to_ascii_lowercase();
    }
    text.nfkc().flat_map(char::to_lowercase).collect()
}

/// The tokens of `text` (normalized here), in order.
pub fn tokens(text: &str) -> Vec<String> {
    let norm = normalize(text);
    let mut out = Vec::new();
    let mut run: Vec<char> = Vec::new();
    let flush = |run: &mut Vec<char>, out: &mut Vec<String>| {
        match run.len() {
            0 => {}
            1 => out.push(run[0].to_string()),
            _ => {
                for w in run.windows(2) {
                    out.push(w.iter().collect());
                }
            }
        }
        run.clear();
    };
    for word in norm.unicode_words() {
        let mut chars = word.chars();
        match chars.next() {
            Some(c) if is_dense(c) => run.extend(word.chars()),
            Some(_) => {
                flush(&mut run, &mut out);
                out.push(word.to_string());
            }
            None => {}
        }
    }
    flush(&mut run, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin_words_lowercased_and_punctuation_dropped() {
        assert_eq!(
            tokens("Hello, World! It's 3.14 — ok?"),
            ["hello", "world", "it's", "3.14", "ok"]
        );
        // NFKC: the ligature and the fullwidth letters fold to plain ones.
        assert_eq!(tokens("ﬁne ＡＢＣ"), ["fine", "abc"]);
        assert_eq!(tokens("Straße ÉCOLE"), ["straße", "école"]);
    }

    #[test]
    fn dense_scripts_become_bigrams_across_punctuation() {
        assert_eq!(tokens("中国人。你好"), ["中国", "国人", "人你", "你好"]);
        assert_eq!(tokens("中国人，你好"), tokens("中国人。你好"));
        assert_eq!(tokens("中国人你好"), tokens("中国人。你好"));
        assert_eq!(tokens("中"), ["中"]);
        // A Latin word ends the run.
        assert_eq!(tokens("中国 abc 人民"), ["中国", "abc", "人民"]);
        assert_eq!(tokens("ภาษาไทย").len(), "ภาษาไทย".chars().count() - 1);
        assert!(tokens("").is_empty());
        assert!(tokens(" ,.!? 。、").is_empty());
    }
}
