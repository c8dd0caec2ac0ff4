//! Progress bars that appear only when a phase runs longer than a moment,
//! and never when stderr is not a terminal or the output is JSON.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a phase runs before its bar appears.
const SHOW_AFTER: Duration = Duration::from_secs(2);

pub struct Progress {
    bar: ProgressBar,
    enabled: bool,
    shown: bool,
    started: Instant,
}

impl Progress {
    /// A hidden bar of `len` steps; `quiet` keeps it hidden for good.
    pub fn new(len: u64, label: &str, unit: &str, quiet: bool) -> Self {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
        let template =
            format!("{{prefix:>8}} [{{bar:40}}] {{human_pos}}/{{human_len}} {unit} ({{eta}} left)");
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(label.to_string());
        Progress {
            bar,
            enabled: !quiet && std::io::stderr().is_terminal(),
            shown: false,
            started: Instant::now(),
        }
    }

    /// Moves the bar to `pos`, showing it once the phase has run a while.
    pub fn set(&mut self, pos: u64) {
        if self.enabled && !self.shown && self.started.elapsed() >= SHOW_AFTER {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        self.bar.set_position(pos);
    }

    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}

/// The driver's progress hooks, drawn with [`Progress`] bars.
pub struct BarObserver {
    quiet: bool,
    bar: Option<Progress>,
}

impl BarObserver {
    pub fn new(quiet: bool) -> Self {
        BarObserver { quiet, bar: None }
    }
}

impl strata_workloads::Observer for BarObserver {
    fn start(&mut self, phase: &str, total: u64, unit: &str) {
        if let Some(b) = self.bar.take() {
            b.finish();
        }
        self.bar = Some(Progress::new(total, phase, unit, self.quiet));
    }
    fn set(&mut self, pos: u64) {
        if let Some(b) = &mut self.bar {
            b.set(pos);
        }
    }
    fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish();
        }
    }
}
