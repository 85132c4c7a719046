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

    /// The line a log gets (no terminal): done of total, the time so far and, before the
    /// end, the time left at the pace so far.
    fn log_line(&self, done: u64, elapsed: f64) -> String {
        let total = self.total;
        let eta = if done < total {
            format!(", ETA {:.0} s", self.left(done, elapsed))
        } else {
            String::new()
        };
        format!(
            "{}: {done}/{total} {}, {elapsed:.0} s{eta}",
            self.label, self.unit
        )
    }

    /// Seconds left at the pace so far.
    fn left(&self, done: u64, elapsed: f64) -> f64 {
        elapsed / done.max(1) as f64 * self.total.saturating_sub(done) as f64
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
        let eta = self.left(done, elapsed);
        let mut err = std::io::stderr().lock();
        if self.tty {
            let width = 30;
            let filled = (done.min(total) * width / total) as usize;
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
                let _ = writeln!(err, "{}", self.log_line(done, elapsed));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_gives_the_time_left_until_the_end() {
        let p = Progress::counting("dptune tune", "runs", 14, false);
        assert_eq!(p.log_line(2, 1.0), "dptune tune: 2/14 runs, 1 s, ETA 6 s");
        assert_eq!(p.log_line(14, 7.2), "dptune tune: 14/14 runs, 7 s");
    }
}
