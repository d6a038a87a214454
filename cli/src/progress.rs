//! Progress bars on stderr: drawn only when stderr is a terminal and `--quiet` is not given.
//! The library reports through `simdex::Progress`; [`Bars`] draws those reports, and [`bar`]
//! serves the CLI's own loops (reading documents, inserting pairs).

use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use simdex::{Progress, ProgressHandle};

/// A bar on stderr, hidden unless `show` and stderr is a terminal.
pub fn bar(show: bool, len: Option<u64>, msg: &str) -> ProgressBar {
    let target = if show && std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let pb = ProgressBar::with_draw_target(len, target);
    let style = match len {
        Some(_) => ProgressStyle::with_template(
            "{msg:>12} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} ({per_sec}, eta {eta})",
        ),
        None => {
            ProgressStyle::with_template("{msg:>12} [{elapsed_precise}] {human_pos} ({per_sec})")
        }
    };
    if let Ok(s) = style {
        pb.set_style(s);
    }
    pb.set_message(msg.to_string());
    pb
}

/// Draws the library's stages, one bar per stage (when `draw`), and asks the work to stop
/// after SIGINT or SIGTERM ([`crate::interrupt`]).
struct Bars {
    draw: bool,
    current: Mutex<Option<ProgressBar>>,
}

impl Progress for Bars {
    fn cancelled(&self) -> bool {
        crate::interrupt::signalled().is_some()
    }
    fn stage(&self, name: &str, total: Option<u64>) {
        if !self.draw {
            return;
        }
        let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(old) = cur.take() {
            old.finish_and_clear();
        }
        *cur = Some(bar(true, total, name));
    }
    fn advance(&self, done: u64) {
        if let Some(b) = &*self.current.lock().unwrap_or_else(|e| e.into_inner()) {
            b.inc(done);
        }
    }
    fn finish(&self) {
        if let Some(b) = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            b.finish_and_clear();
        }
    }
}

/// The library's progress, drawn as bars when `show` and stderr is a terminal; cancelled by
/// SIGINT or SIGTERM once [`crate::interrupt::install`] ran.
pub fn handle(show: bool) -> ProgressHandle {
    ProgressHandle::new(Bars {
        draw: show && std::io::stderr().is_terminal(),
        current: Mutex::new(None),
    })
}
