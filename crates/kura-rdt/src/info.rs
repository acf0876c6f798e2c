//! `info/L3` of a resctrl mount: the capacity bitmask of all ways, the fewest bits a
//! mask may have, the number of classes of service and the ways shared with devices.

use std::fs;
use std::path::Path;

use crate::error::{io, RdtError};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct L3Info {
    /// All ways (`cbm_mask`, hex).
    pub cbm_mask: u64,
    pub min_cbm_bits: u32,
    pub num_closids: u32,
    /// Ways other devices (I/O, GPUs) may also fill (`shareable_bits`, hex).
    pub shareable_bits: u64,
}

fn read_trimmed(path: &Path) -> Result<String, RdtError> {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| io(path, e))
}

fn hex(path: &Path) -> Result<u64, RdtError> {
    let s = read_trimmed(path)?;
    u64::from_str_radix(&s, 16).map_err(|_| RdtError::Parse {
        path: path.to_path_buf(),
        content: s,
    })
}

fn decimal(path: &Path) -> Result<u32, RdtError> {
    let s = read_trimmed(path)?;
    s.parse().map_err(|_| RdtError::Parse {
        path: path.to_path_buf(),
        content: s,
    })
}

impl L3Info {
    /// Reads `<root>/info/L3`.
    pub fn read(root: &Path) -> Result<Self, RdtError> {
        let dir = root.join("info").join("L3");
        let info = Self {
            cbm_mask: hex(&dir.join("cbm_mask"))?,
            min_cbm_bits: decimal(&dir.join("min_cbm_bits"))?,
            num_closids: decimal(&dir.join("num_closids"))?,
            shareable_bits: hex(&dir.join("shareable_bits"))?,
        };
        if info.cbm_mask == 0 {
            return Err(RdtError::Parse {
                path: dir.join("cbm_mask"),
                content: "0".into(),
            });
        }
        Ok(info)
    }

    /// Number of LLC ways CAT controls.
    pub fn ways(&self) -> u32 {
        self.cbm_mask.count_ones()
    }
}

/// Checks `mask` the way the kernel will, before writing it: non-empty, one
/// contiguous run of bits, within `cbm_mask`, at least `min_cbm_bits` long.
pub fn validate_mask(info: &L3Info, mask: u64) -> Result<(), RdtError> {
    let reject = |reason: String| Err(RdtError::InvalidMask { mask, reason });
    if mask == 0 {
        return reject("a mask needs at least one way".into());
    }
    if mask & !info.cbm_mask != 0 {
        return reject(format!("bits outside cbm_mask {:#x}", info.cbm_mask));
    }
    let run = mask >> mask.trailing_zeros();
    if run & run.wrapping_add(1) != 0 {
        return reject("the ways must be contiguous".into());
    }
    if mask.count_ones() < info.min_cbm_bits {
        return reject(format!(
            "{} ways, fewer than min_cbm_bits = {}",
            mask.count_ones(),
            info.min_cbm_bits
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> L3Info {
        L3Info {
            cbm_mask: 0x7ff,
            min_cbm_bits: 2,
            num_closids: 16,
            shareable_bits: 0x600,
        }
    }

    #[test]
    fn masks_are_checked_before_writing() {
        let i = info();
        assert_eq!(i.ways(), 11);
        assert!(validate_mask(&i, 0x7ff).is_ok());
        assert!(validate_mask(&i, 0x00c).is_ok());
        let err = |m| validate_mask(&i, m).unwrap_err().to_string();
        assert!(err(0).contains("at least one way"));
        assert!(err(0x805).contains("outside cbm_mask"));
        assert!(err(0x005).contains("contiguous"));
        assert!(err(0x010).contains("min_cbm_bits = 2"));
    }
}
