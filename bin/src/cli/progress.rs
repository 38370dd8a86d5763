//! The transfer progress bar: drawn on stderr only when stderr is a
//! terminal, so logs, pipes and tests see no escape codes.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar that may be hidden.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar labelled `label`, shown when stderr is a terminal and `quiet`
    /// is false.
    pub fn new(label: &str, quiet: bool) -> Self {
        if quiet || !std::io::stderr().is_terminal() {
            return Self { bar: None };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(label.to_string());
        Self { bar: Some(bar) }
    }

    /// `done` of `total` bytes.
    pub fn update(&mut self, done: u64, total: u64) {
        if let Some(bar) = &self.bar {
            if bar.length() != Some(total) {
                bar.set_length(total);
            }
            bar.set_position(done);
        }
    }

    /// Removes the bar from the screen.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
