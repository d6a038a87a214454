//! Document names held for a whole run, in one buffer: a name costs its bytes and 8 more, not a
//! `String` each (24 bytes and an allocation of its own, about 60 bytes a short id).

use std::ops::Index;

/// Names `0..len` in order of their push.
#[derive(Debug, Default)]
pub struct Names {
    bytes: String,
    ends: Vec<u64>,
}

impl Names {
    /// Add the next name.
    pub fn push(&mut self, name: &str) {
        self.bytes.push_str(name);
        self.ends.push(self.bytes.len() as u64);
    }

    /// Bytes held.
    pub fn memory_bytes(&self) -> u64 {
        (self.bytes.capacity() + self.ends.capacity() * 8) as u64
    }
}

impl Index<usize> for Names {
    type Output = str;
    fn index(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }
}
