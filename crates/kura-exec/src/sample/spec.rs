//! What `TABLESAMPLE` asks for: the method, the percentage and the seed, and
//! the keep-or-skip decision for a row or page.

use std::fmt;

use kura_common::Value;

/// PostgreSQL's two built-in sampling methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleMethod {
    /// Each row kept independently.
    Bernoulli,
    /// Each storage page kept or skipped whole; skipped pages are never read.
    System,
}

/// What to take of a table: a method, a percentage and the seed that makes the
/// choice (from `REPEATABLE`, or drawn once per statement).
#[derive(Debug, Clone, PartialEq)]
pub struct TableSample {
    pub method: SampleMethod,
    /// In `[0, 100]`.
    pub percent: f64,
    pub seed: u64,
    /// Whether the seed came from `REPEATABLE` (shown by EXPLAIN).
    pub repeatable: bool,
}

impl TableSample {
    /// Whether the unit (row or page) starting at row `position` is kept: a hash
    /// of (seed, position), so a scan split over threads, or run again with the
    /// same seed, keeps the same units.
    pub fn keeps(&self, position: u64) -> bool {
        if self.percent >= 100.0 {
            return true;
        }
        let h = mix(self.seed ^ mix(position.wrapping_add(0x9e37_79b9_7f4a_7c15)));
        // The top 53 bits as a uniform number in [0, 1).
        let u = (h >> 11) as f64 / (1u64 << 53) as f64;
        u * 100.0 < self.percent
    }

    /// The fraction of rows the sample is expected to keep (for estimates).
    pub fn fraction(&self) -> f64 {
        self.percent / 100.0
    }

    /// Rows `first..first + len` the sample keeps, as offsets from `first`.
    pub fn kept_rows(&self, first: u64, len: usize) -> Vec<u32> {
        (0..len as u32)
            .filter(|&i| self.keeps(first + i as u64))
            .collect()
    }
}

impl fmt::Display for TableSample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = match self.method {
            SampleMethod::Bernoulli => "bernoulli",
            SampleMethod::System => "system",
        };
        write!(f, "{m}({})", self.percent)?;
        if self.repeatable {
            write!(f, " repeatable")?;
        }
        Ok(())
    }
}

/// SplitMix64's finalizer: a cheap, well-mixed 64-bit hash.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The sample percentage as PostgreSQL checks it.
pub fn check_percent(v: &Value) -> Result<f64, &'static str> {
    match v.as_f64() {
        None => Err("TABLESAMPLE parameter cannot be null"),
        Some(p) if !(0.0..=100.0).contains(&p) => {
            Err("sample percentage must be between 0 and 100")
        }
        Some(p) => Ok(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(percent: f64, seed: u64) -> TableSample {
        TableSample {
            method: SampleMethod::Bernoulli,
            percent,
            seed,
            repeatable: true,
        }
    }

    #[test]
    fn keeps_about_the_percentage_and_the_same_rows_per_seed() {
        let s = sample(10.0, 7);
        let kept = s.kept_rows(0, 100_000);
        assert!((9_000..11_000).contains(&kept.len()), "{}", kept.len());
        assert_eq!(kept, s.kept_rows(0, 100_000));
        assert_ne!(kept, sample(10.0, 8).kept_rows(0, 100_000));
        assert!(sample(0.0, 1).kept_rows(0, 1000).is_empty());
        assert_eq!(sample(100.0, 1).kept_rows(0, 1000).len(), 1000);
    }
}
