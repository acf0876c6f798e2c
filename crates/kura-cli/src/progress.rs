//! Progress bars (indicatif) for long work — shown only on a terminal, quiet otherwise.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

/// A byte-progress bar for loads, or `None` when stderr is not a terminal.
pub fn for_loads() -> Option<Arc<kura::Progress>> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar: Mutex<Option<(String, ProgressBar)>> = Mutex::new(None);
    Some(Arc::new(move |label: &str, done: u64, total: u64| {
        let mut slot = bar.lock().unwrap_or_else(|p| p.into_inner());
        if slot.as_ref().is_none_or(|(l, _)| l != label) {
            if let Some((_, b)) = slot.take() {
                b.finish_and_clear();
            }
            // Index builds count rows, loads count bytes.
            let bar = if label.starts_with("index ") {
                count_bar(label, total, "rows")
            } else {
                bytes_bar(label, total)
            };
            *slot = Some((label.to_string(), bar));
        }
        let (_, b) = slot.as_ref().unwrap();
        b.set_position(done);
        if done >= total {
            b.finish_and_clear();
        }
    }))
}

/// A bar counting bytes towards `total` (a spinner if the total is unknown).
pub fn bytes_bar(label: &str, total: u64) -> ProgressBar {
    let b = if total > 0 {
        ProgressBar::new(total)
    } else {
        ProgressBar::new_spinner()
    };
    b.set_style(
        ProgressStyle::with_template(
            "{msg:>24} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    b.set_message(label.to_string());
    b
}

/// A bar counting `unit`s towards `total`, with rate and ETA.
pub fn count_bar(label: &str, total: u64, unit: &str) -> ProgressBar {
    let b = ProgressBar::new(total);
    b.set_style(
        ProgressStyle::with_template(&format!(
            "{{msg:>24}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit} {{rate}} ETA {{eta}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        // indicatif's own {per_sec} prints four decimals ("28.4955/s").
        .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&rate(s.per_sec()));
        })
        .progress_chars("=> "),
    );
    b.set_message(label.to_string());
    b
}

/// A rate for people: `2.4M/s`, `312k/s`, `28/s`, `3.5/s`.
fn rate(per_sec: f64) -> String {
    match per_sec {
        r if !r.is_finite() || r <= 0.0 => "-/s".into(),
        r if r >= 1e6 => format!("{:.1}M/s", r / 1e6),
        r if r >= 1e4 => format!("{:.0}k/s", r / 1e3),
        r if r >= 10.0 => format!("{r:.0}/s"),
        r => format!("{r:.1}/s"),
    }
}

/// Byte progress of work split by table (generated in parallel or loaded one
/// after another): each table reports its own running count, the bar shows the sum
/// against a known or estimated total.
pub struct TableBytes {
    bar: Option<ProgressBar>,
    done: Mutex<std::collections::HashMap<String, u64>>,
}

impl TableBytes {
    /// `None` bar off a terminal.
    pub fn new(label: &str, total: u64) -> Self {
        TableBytes {
            bar: on_terminal().then(|| bytes_bar(label, total)),
            done: Mutex::new(Default::default()),
        }
    }

    pub fn update(&self, table: &str, bytes: u64) {
        let Some(bar) = &self.bar else { return };
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        done.insert(table.to_string(), bytes);
        let sum: u64 = done.values().sum();
        // An estimated total may be short; grow it rather than overflow the bar.
        if bar.length().is_some_and(|l| sum > l) {
            bar.set_length(sum);
        }
        bar.set_position(sum);
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Whether progress should be drawn at all.
pub fn on_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// A spinner with the elapsed time, ticking on its own until finished.
pub fn spinner(label: &str) -> ProgressBar {
    let b = ProgressBar::new_spinner();
    b.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed_precise}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    b.set_message(label.to_string());
    b.enable_steady_tick(std::time::Duration::from_millis(100));
    b
}

#[cfg(test)]
mod tests {
    use super::rate;

    #[test]
    fn rates_read_without_spurious_decimals() {
        assert_eq!(rate(28.4955), "28/s");
        assert_eq!(rate(3.46), "3.5/s");
        assert_eq!(rate(2_411_962.68), "2.4M/s");
        assert_eq!(rate(312_400.0), "312k/s");
        assert_eq!(rate(0.0), "-/s");
        assert_eq!(rate(f64::NAN), "-/s");
    }
}
