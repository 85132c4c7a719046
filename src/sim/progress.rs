//! A progress bar on stderr: redrawn in place on a terminal, a line every 10% otherwise (logs).

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Instant;

pub struct Progress {
    label: String,
    unit: &'static str,
    total: u64,
    enabled: bool,
    tty: bool,
    start: Instant,
    state: Mutex<(u64, u64)>, // (done, last printed decile)
}

impl Progress {
    pub fn new(label: &str, total: u64, enabled: bool) -> Self {
        Self::counting(label, "units", total, enabled)
    }

    /// A bar counting `unit` (e.g. "runs").
    pub fn counting(label: &str, unit: &'static str, total: u64, enabled: bool) -> Self {
        Progress {
            label: label.to_string(),
            unit,
            total,
            enabled: enabled && total > 0,
            tty: std::io::stderr().is_terminal(),
            start: Instant::now(),
            state: Mutex::new((0, 0)),
        }
    }

    /// One more unit done.
    pub fn tick(&self) {
        if !self.enabled {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.0 += 1;
        let (done, total) = (s.0, self.total);
        let elapsed = self.start.elapsed().as_secs_f64();
        let eta = elapsed / done as f64 * (total - done.min(total)) as f64;
        let mut err = std::io::stderr().lock();
        if self.tty {
            let width = 30;
            let filled = (done * width / total) as usize;
            let _ = write!(
                err,
                "\r{} [{}{}] {done}/{total} {}, {elapsed:.0} s, ETA {eta:.0} s ",
                self.label,
                "#".repeat(filled),
                " ".repeat(width as usize - filled),
                self.unit
            );
            if done == total {
                let _ = writeln!(err);
            }
        } else {
            let decile = done * 10 / total;
            if decile > s.1 || done == total {
                s.1 = decile;
                let _ = writeln!(
                    err,
                    "{}: {done}/{total} {}, {elapsed:.0} s",
                    self.label, self.unit
                );
            }
        }
    }
}
