//! The instruction sets the lanes' loop is compiled for, and the one step that differs
//! between them: the distance test.

use std::arch::x86_64::*;

#[cfg(test)]
thread_local! {
    /// Tests: run the AVX2 loop on this thread even where AVX-512 is present.
    pub(crate) static AVX2_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the CPU runs the AVX-512 variant of the loop: VL and VPOPCNTDQ (with BMI2 and MOVBE,
/// which every such CPU has).
#[inline]
pub(crate) fn avx512() -> bool {
    #[cfg(test)]
    if AVX2_ONLY.get() {
        return false;
    }
    std::is_x86_feature_detected!("avx512vpopcntdq")
        && std::is_x86_feature_detected!("avx512vl")
        && std::is_x86_feature_detected!("bmi2")
        && std::is_x86_feature_detected!("movbe")
}

/// The one step of the loop that differs between instruction sets: which lanes' distances
/// exceed k.
pub(super) trait Isa {
    /// All ones in each lane where `popcount(x) > k` (`kv`: k in every lane).
    ///
    /// # Safety
    /// The CPU must support the implementation's features.
    unsafe fn far(x: __m256i, kv: __m256i) -> __m256i;
}

/// AVX2: popcount by nibble lookups.
pub(super) struct Avx2;

impl Isa for Avx2 {
    #[inline(always)]
    unsafe fn far(x: __m256i, kv: __m256i) -> __m256i {
        // SAFETY: AVX2, the caller's.
        unsafe {
            let nibbles = _mm256_setr_epi8(
                0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3,
                2, 3, 3, 4,
            );
            let low4 = _mm256_set1_epi8(0x0f);
            let counts = _mm256_add_epi8(
                _mm256_shuffle_epi8(nibbles, _mm256_and_si256(x, low4)),
                _mm256_shuffle_epi8(nibbles, _mm256_and_si256(_mm256_srli_epi16::<4>(x), low4)),
            );
            _mm256_cmpgt_epi64(_mm256_sad_epu8(counts, _mm256_setzero_si256()), kv)
        }
    }
}

/// AVX-512 (VL and VPOPCNTDQ) on 256-bit registers: one popcount instruction.
pub(super) struct Avx512;

impl Isa for Avx512 {
    #[inline(always)]
    unsafe fn far(x: __m256i, kv: __m256i) -> __m256i {
        // SAFETY: AVX-512 VL and VPOPCNTDQ, the caller's.
        unsafe { _mm256_cmpgt_epi64(_mm256_popcnt_epi64(x), kv) }
    }
}
