//! A probe as planned for decoding — its table, range, block and segment — and the streams
//! the decoders (`multiscan`'s scalar loop and `lanes`) take planned probes from.

use super::cursor::Work;
use super::segment::{Entry, Shape};
use crate::error::Result;

/// A planned probe: the keys of table `table` in `lo..=hi`, compared with the permuted
/// query `query`, decoded from the segment `entry` of block `block` on (with what planning
/// read of its skip entries); `shape` is that block's segment layout, parsed while planning
/// (`None` for unsegmented tables and heads the block decoder must name).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Planned {
    pub(crate) table: usize,
    pub(crate) query: u64,
    pub(crate) lo: u64,
    pub(crate) hi: u64,
    pub(crate) block: u64,
    /// While planning: the directory slot of `lo`, then the blocks to search for it (one,
    /// `(b, b)`, where the slot's bucket decided it).
    pub(crate) slice: (u32, u32),
    pub(crate) entry: Entry,
    pub(crate) shape: Option<Shape>,
}

/// A stream of planned probes, each tagged (with its query), read in place: the lanes take
/// one at a time where a lane is free. (Handing each probe out by value, tag and all, cost
/// about 30 instructions of copying a probe.)
pub(crate) trait ProbeStream {
    /// Move to the next probe: its tag, or `None` at the end.
    fn advance(&mut self, work: &mut Work) -> Result<Option<u32>>;
    /// The probe [`advance`](Self::advance) moved to.
    fn current(&self) -> &Planned;
}

/// One query's planned probes, tag 0.
pub(crate) struct PlannedProbes<'p> {
    pub(crate) plan: &'p [Planned],
    pub(crate) at: usize,
}

impl ProbeStream for PlannedProbes<'_> {
    #[inline]
    fn advance(&mut self, _: &mut Work) -> Result<Option<u32>> {
        if self.at < self.plan.len() {
            self.at += 1;
            Ok(Some(0))
        } else {
            Ok(None)
        }
    }

    #[inline]
    fn current(&self) -> &Planned {
        &self.plan[self.at - 1]
    }
}
