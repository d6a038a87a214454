//! The state of four probes decoded together ([`Group`]), laid out for vector loads: one
//! 32-byte field per quantity, a lane each.

use crate::codec::huffman::LANE_BITS;
use crate::table::segment::Shape;

/// Lanes of one register.
pub(super) const LANES: usize = 4;

/// Where an idle lane points: eight readable bytes and a first-level table's worth of zeros,
/// so the loads of idle lanes read valid memory without a branch.
static IDLE: [u16; 1 << LANE_BITS] = [0; 1 << LANE_BITS];

/// Four lanes of one field, aligned for vector loads and stores.
#[repr(C, align(32))]
#[derive(Clone, Copy, Default)]
pub(super) struct V(pub(super) [u64; LANES]);

/// Four probes in flight. Vector fields first; `table` and `block` are the scalar side.
#[derive(Clone, Copy)]
pub(super) struct Group {
    /// All ones for a lane still decoding, zero for an idle one.
    pub(super) active: V,
    /// Address of the lane's block stream.
    pub(super) base: V,
    /// Bit position in the stream, and the stream's length in bits.
    pub(super) pos: V,
    pub(super) end: V,
    /// The last key decoded, and the keys left in the block.
    pub(super) prev: V,
    pub(super) remaining: V,
    /// The probe's range and the permuted query; the range's ends with the top bit flipped, so
    /// that signed compares order them as unsigned.
    pub(super) lo_x: V,
    pub(super) hi_x: V,
    pub(super) q: V,
    /// Address of the lane's first-level decode table.
    pub(super) primary: V,
    pub(super) table: [usize; LANES],
    pub(super) block: [u64; LANES],
    /// The segment the lane decodes, the one it started the block at, and the block's last.
    pub(super) segment: [u32; LANES],
    pub(super) start_segment: [u32; LANES],
    pub(super) last_segment: [u32; LANES],
    /// Whether the block's last key, not coded (format 3), is still to come after the last
    /// segment's coded keys.
    pub(super) implicit: [bool; LANES],
    /// Whether the lane's range ends with its segment: the next segment starts above it
    /// (format 4), so the lane retires once the segment's keys are read.
    pub(super) stop: [bool; LANES],
    /// The lane's `remaining` when its keys were last counted: every key decoded takes one
    /// from `remaining`, so the keys decoded since are the difference (counted at segment and
    /// block changes and when the lane retires, not in every step of the loop).
    pub(super) counted: [u64; LANES],
    /// The tag of the lane's probe (its query, in a stream of many queries' probes).
    pub(super) tag: [u32; LANES],
    /// The segment shape of the lane's block, for its segment changes.
    pub(super) shape: [Shape; LANES],
}

impl Group {
    pub(super) fn new() -> Group {
        let idle = V([IDLE.as_ptr() as u64; LANES]);
        Group {
            active: V::default(),
            base: idle,
            pos: V::default(),
            end: V::default(),
            prev: V::default(),
            remaining: V::default(),
            lo_x: V::default(),
            hi_x: V::default(),
            q: V::default(),
            primary: idle,
            table: [0; LANES],
            block: [0; LANES],
            segment: [0; LANES],
            start_segment: [0; LANES],
            last_segment: [0; LANES],
            implicit: [false; LANES],
            stop: [false; LANES],
            counted: [0; LANES],
            tag: [0; LANES],
            shape: [Shape::default(); LANES],
        }
    }

    #[inline(always)]
    pub(super) fn live(&self) -> bool {
        self.active.0.iter().any(|&a| a != 0)
    }

    /// Keys lane `i` decoded since they were last counted; counts them.
    #[inline]
    pub(super) fn take_decoded(&mut self, i: usize) -> u64 {
        let n = self.counted[i] - self.remaining.0[i];
        self.counted[i] = self.remaining.0[i];
        n
    }

    /// Set lane `i`'s coded keys left in its segment (its keys counted before).
    #[inline]
    pub(super) fn set_remaining(&mut self, i: usize, left: u64) {
        self.remaining.0[i] = left;
        self.counted[i] = left;
    }

    /// Retire lane `i` (its probe ended): idle, its keys counted; the keys not yet counted.
    #[inline]
    pub(super) fn retire(&mut self, i: usize) -> u64 {
        let n = self.take_decoded(i);
        self.idle(i);
        n
    }

    pub(super) fn idle(&mut self, i: usize) {
        self.active.0[i] = 0;
        self.base.0[i] = IDLE.as_ptr() as u64;
        self.primary.0[i] = IDLE.as_ptr() as u64;
        self.pos.0[i] = 0;
    }
}

/// Where a lane takes over a block: the block's stream, the segment and the stream bits of its
/// next delta, the key just decoded, and the coded keys left in the segment after it.
pub(super) struct LaneStart<'a> {
    pub(super) stream: &'a [u8],
    pub(super) segment: u32,
    pub(super) last_segment: u32,
    pub(super) pos: u64,
    pub(super) end: u64,
    pub(super) key: u64,
    pub(super) left: u32,
    pub(super) implicit: bool,
    /// The range ends with this segment ([`Group::stop`]).
    pub(super) stop: bool,
    pub(super) shape: Shape,
}
