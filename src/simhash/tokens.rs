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
    let mut out = String::new();
    normalize_into(text, &mut out);
    out
}

/// [`normalize`] into `out` (cleared first), reusing its allocation.
fn normalize_into(text: &str, out: &mut String) {
    out.clear();
    if text.is_ascii() {
        // NFKC leaves ASCII unchanged and its lowercase is ASCII's: same result, much faster.
        out.push_str(text);
        out.make_ascii_lowercase();
    } else {
        out.extend(text.nfkc().flat_map(char::to_lowercase));
    }
}

/// The tokens of `text` (normalized here), in order.
pub fn tokens(text: &str) -> Vec<String> {
    let mut t = Tokenized::default();
    t.tokenize(text);
    (0..t.len()).map(|i| t.joined(i, i + 1).to_owned()).collect()
}

/// UAX #29 word boundaries of an ASCII text, the words (segments with a letter or digit) in
/// order: exactly `unicode_words` on ASCII input (tested against it on random strings of every
/// character class), at a fraction of its cost. In ASCII the rules that can hold are few:
/// letters and digits join (WB5, WB8-10); `:` (MidLetter), `.` and `'` (MidNumLetQ) join two
/// letters (WB6-7); `,` and `;` (MidNum), `.` and `'` join two digits (WB11-12); `_`
/// (ExtendNumLet) joins letters, digits and itself (WB13a-b); everything else breaks (WB999).
fn ascii_words(text: &str, mut word: impl FnMut(&str)) {
    let s = text.as_bytes();
    let at = |i: usize| s.get(i).map_or(C::Other, |&b| ASCII_CLASS[b as usize]);
    // Whether there is no boundary between s[i - 1] and s[i].
    let joins = |i: usize| {
        let before2 = if i >= 2 { at(i - 2) } else { C::Other };
        match (at(i - 1), at(i)) {
            (C::Letter | C::Digit, C::Letter | C::Digit) => true,
            (C::Letter, C::MidLetter | C::MidNumLet) => at(i + 1) == C::Letter,
            (C::MidLetter | C::MidNumLet, C::Letter) => before2 == C::Letter,
            (C::Digit, C::MidNum | C::MidNumLet) => at(i + 1) == C::Digit,
            (C::MidNum | C::MidNumLet, C::Digit) => before2 == C::Digit,
            (C::Letter | C::Digit | C::Extend, C::Extend) => true,
            (C::Extend, C::Letter | C::Digit) => true,
            _ => false,
        }
    };
    let mut i = 0;
    while i < s.len() {
        if at(i) == C::Other {
            i += 1;
            continue;
        }
        let start = i;
        let mut alnum = s[i].is_ascii_alphanumeric();
        i += 1;
        loop {
            // The common case first: letters and digits.
            while i < s.len() && s[i].is_ascii_alphanumeric() && s[i - 1].is_ascii_alphanumeric() {
                alnum = true;
                i += 1;
            }
            if i < s.len() && joins(i) {
                alnum |= s[i].is_ascii_alphanumeric();
                i += 1;
            } else {
                break;
            }
        }
        if alnum {
            word(&text[start..i]);
        }
    }
}

/// The UAX #29 word-break classes that ASCII characters have.
#[derive(Clone, Copy, PartialEq, Eq)]
enum C {
    Letter,
    Digit,
    MidLetter,
    MidNumLet,
    MidNum,
    Extend,
    Other,
}

static ASCII_CLASS: [C; 256] = {
    let mut t = [C::Other; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = match b as u8 {
            b'a'..=b'z' | b'A'..=b'Z' => C::Letter,
            b'0'..=b'9' => C::Digit,
            b':' => C::MidLetter,
            b'.' | b'\'' => C::MidNumLet,
            b',' | b';' => C::MidNum,
            b'_' => C::Extend,
            _ => C::Other,
        };
        b += 1;
    }
    t
};

/// A text's tokens, held as one string of the tokens joined by single spaces plus where each
/// starts: a run of consecutive tokens joined by spaces (a shingle, the feature the hash
/// reads) is then a slice, with no string built per token or per shingle. Reused across texts
/// (a thread's buffers), tokenizing costs no allocation once they have grown.
#[derive(Debug, Default)]
pub(crate) struct Tokenized {
    norm: String,
    joined: String,
    starts: Vec<usize>,
    run: Vec<char>,
}

/// A new token starts: after a separating space unless it is the first.
fn start_token(joined: &mut String, starts: &mut Vec<usize>) {
    if !starts.is_empty() {
        joined.push(' ');
    }
    starts.push(joined.len());
}

impl Tokenized {
    /// Bytes its buffers hold.
    pub(crate) fn capacity_bytes(&self) -> usize {
        self.norm.capacity()
            + self.joined.capacity()
            + self.starts.capacity() * std::mem::size_of::<usize>()
            + self.run.capacity() * std::mem::size_of::<char>()
    }

    /// Tokenize `text`, replacing the previous text's tokens.
    pub(crate) fn tokenize(&mut self, text: &str) {
        self.joined.clear();
        self.starts.clear();
        if text.is_ascii() {
            // Normalizing ASCII is lowercasing it, which changes no word boundary: the words
            // of the text as written, lowercased as they are copied, and no character of a
            // dense script.
            let (joined, starts) = (&mut self.joined, &mut self.starts);
            ascii_words(text, |word| {
                start_token(joined, starts);
                let at = joined.len();
                joined.push_str(word);
                joined[at..].make_ascii_lowercase();
            });
            return;
        }
        normalize_into(text, &mut self.norm);
        self.run.clear();
        let Tokenized {
            norm,
            joined,
            starts,
            run,
        } = self;
        let flush = |run: &mut Vec<char>, joined: &mut String, starts: &mut Vec<usize>| {
            if run.len() == 1 {
                start_token(joined, starts);
                joined.push(run[0]);
            }
            for w in run.windows(2) {
                start_token(joined, starts);
                joined.extend(w);
            }
            run.clear();
        };
        for word in norm.unicode_words() {
            match word.chars().next() {
                Some(c) if is_dense(c) => run.extend(word.chars()),
                Some(_) => {
                    flush(run, joined, starts);
                    start_token(joined, starts);
                    joined.push_str(word);
                }
                None => {}
            }
        }
        flush(run, joined, starts);
    }

    /// How many tokens.
    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    /// Tokens `i..j` (`i < j <= len`) joined by single spaces.
    pub(crate) fn joined(&self, i: usize, j: usize) -> &str {
        let end = match self.starts.get(j) {
            Some(&s) => s - 1, // the space before token j
            None => self.joined.len(),
        };
        &self.joined[self.starts[i]..end]
    }
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

    /// The ASCII word boundaries are `unicode_words`' on random strings of every class that
    /// takes part in a rule (and of several that do not).
    #[test]
    fn ascii_words_are_unicode_words() {
        let alphabet = b"aZq09 .:',;_-!\"\n\r\t/";
        let mut seed = 1u64;
        for _ in 0..200_000 {
            let len = (crate::sample::splitmix64(&mut seed) % 16) as usize;
            let s: String = (0..len)
                .map(|_| {
                    alphabet[(crate::sample::splitmix64(&mut seed) % alphabet.len() as u64) as usize]
                        as char
                })
                .collect();
            let mut got = Vec::new();
            ascii_words(&s, |w| got.push(w.to_owned()));
            let want: Vec<&str> = s.unicode_words().collect();
            assert_eq!(got, want, "{s:?}");
        }
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
