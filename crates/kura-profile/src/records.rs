//! Precise memory samples as the kernel delivers them: PERF_RECORD_SAMPLE records
//! (perf_event.h layout, as in the mmap ring buffer and perf.data), the
//! `perf_mem_data_src` word of Intel PEBS load-latency samples, and the raw
//! register block of AMD IBS op samples (amd-ibs.h). The live path gets the same
//! fields from the perf-event-open crate; these parsers read recorded files.

use serde::{Deserialize, Serialize};

use crate::ProfileError;
use sample_type as st;

/// perf_event_attr.sample_type bits this parser understands.
pub mod sample_type {
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const RAW: u64 = 1 << 10;
    pub const BRANCH_STACK: u64 = 1 << 11;
    pub const REGS_USER: u64 = 1 << 12;
    pub const STACK_USER: u64 = 1 << 13;
    pub const WEIGHT: u64 = 1 << 14;
    pub const DATA_SRC: u64 = 1 << 15;
    pub const IDENTIFIER: u64 = 1 << 16;
}

const PERF_RECORD_SAMPLE: u32 = 9;
/// Callchain entries above this are context markers (PERF_CONTEXT_USER, ...).
const PERF_CONTEXT_MAX: u64 = u64::MAX - 4095 + 1;

/// One sample, whatever produced it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub ip: u64,
    pub tid: u32,
    /// CLOCK_MONOTONIC ns (the live sampler asks for that clock).
    pub time: u64,
    /// Data address, where the CPU reports one.
    pub addr: Option<u64>,
    /// Where the load was served ("L1", "L2", "L3", "RAM", ...).
    pub level: Option<String>,
    /// Load latency in cycles (PEBS weight, IBS DcMissLat).
    pub latency: Option<u64>,
    /// User-space return addresses, innermost first (without `ip`).
    pub callchain: Vec<u64>,
}

impl Sample {
    /// Missed the first-level data cache.
    pub fn l1_miss(&self) -> bool {
        matches!(self.level.as_deref(), Some(l) if l != "L1")
    }

    /// Missed the last-level cache (served by memory or another socket).
    pub fn llc_miss(&self) -> bool {
        matches!(
            self.level.as_deref(),
            Some("RAM" | "remote RAM" | "remote cache")
        )
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], ProfileError> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let end = end.ok_or_else(|| {
            ProfileError::Invalid(format!("sample record truncated at byte {}", self.at))
        })?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u64(&mut self) -> Result<u64, ProfileError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn u32(&mut self) -> Result<u32, ProfileError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
}

/// Decodes the sample records of a perf record stream (header {u32 type, u16
/// misc, u16 size} then the body; other record types are skipped) written with
/// `sample_type`. RAW bodies go through `raw` (an IBS decoder, say), which may
/// fill in the sample.
pub fn parse_stream(
    bytes: &[u8],
    sample_type: u64,
    mut raw: impl FnMut(&[u8], &mut Sample) -> Result<(), ProfileError>,
) -> Result<Vec<Sample>, ProfileError> {
    let unsupported = st::READ | st::BRANCH_STACK | st::REGS_USER | st::STACK_USER;
    if sample_type & unsupported != 0 {
        return Err(ProfileError::Invalid(
            "sample records with READ, BRANCH_STACK or register/stack dumps are not supported"
                .into(),
        ));
    }
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let mut h = Reader { bytes, at };
        let kind = h.u32()?;
        let _misc = h.take(2)?;
        let size = u16::from_le_bytes(h.take(2)?.try_into().expect("2 bytes")) as usize;
        if size < 8 || at + size > bytes.len() {
            return Err(ProfileError::Invalid(format!(
                "bad record size {size} at byte {at}"
            )));
        }
        if kind == PERF_RECORD_SAMPLE {
            let mut r = Reader {
                bytes: &bytes[..at + size],
                at: at + 8,
            };
            let mut s = Sample::default();
            if sample_type & st::IDENTIFIER != 0 {
                r.u64()?;
            }
            if sample_type & st::IP != 0 {
                s.ip = r.u64()?;
            }
            if sample_type & st::TID != 0 {
                let _pid = r.u32()?;
                s.tid = r.u32()?;
            }
            if sample_type & st::TIME != 0 {
                s.time = r.u64()?;
            }
            if sample_type & st::ADDR != 0 {
                s.addr = Some(r.u64()?);
            }
            for bit in [st::ID, st::STREAM_ID, st::CPU, st::PERIOD] {
                if sample_type & bit != 0 {
                    r.u64()?;
                }
            }
            if sample_type & st::CALLCHAIN != 0 {
                let n = r.u64()? as usize;
                for _ in 0..n {
                    let ip = r.u64()?;
                    if ip < PERF_CONTEXT_MAX && ip != s.ip {
                        s.callchain.push(ip);
                    }
                }
            }
            if sample_type & st::RAW != 0 {
                let n = r.u32()? as usize;
                let body = r.take(n)?;
                raw(body, &mut s)?;
            }
            if sample_type & st::WEIGHT != 0 {
                let w = r.u64()?;
                s.latency = (w > 0).then_some(w);
            }
            if sample_type & st::DATA_SRC != 0 {
                s.level = data_src_level(r.u64()?);
            }
            out.push(s);
        }
        at += size;
    }
    Ok(out)
}

/// The level that served a load, from a `perf_mem_data_src` word: the
/// `mem_lvl_num` field (bits 33–36) where set, else the `mem_lvl` bits (5–18).
/// `None` when the sample says nothing (not a load, or level n/a).
pub fn data_src_level(word: u64) -> Option<String> {
    let op = word & 0x1f;
    if op & 0x2 == 0 && op & 0x4 == 0 {
        return None;
    }
    let remote = (word >> 37) & 1 == 1;
    let level = match (word >> 33) & 0xf {
        0x1 => Some("L1"),
        0x2 => Some("L2"),
        0x3 => Some("L3"),
        0x4 => Some("L4"),
        0xc => Some("LFB"),
        0xd if remote => Some("remote RAM"),
        0xd => Some("RAM"),
        0xb if remote => Some("remote cache"),
        _ => None,
    };
    if let Some(l) = level {
        return Some(l.to_string());
    }
    let lvl = (word >> 5) & 0x3fff;
    let named = [
        (0x2000, "uncached"),
        (0x1000, "IO"),
        (0x0c00, "remote cache"),
        (0x0300, "remote RAM"),
        (0x0080, "RAM"),
        (0x0040, "L3"),
        (0x0020, "L2"),
        (0x0010, "LFB"),
        (0x0008, "L1"),
    ];
    named
        .iter()
        .find(|(bits, _)| lvl & bits != 0)
        .map(|(_, n)| n.to_string())
}

/// The fields of one AMD IBS op sample that kura uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbsOp {
    pub rip: Option<u64>,
    pub load: bool,
    pub store: bool,
    pub dc_miss: bool,
    pub l2_miss: bool,
    pub miss_latency: u64,
    pub lin_addr: Option<u64>,
    /// IbsOpData2 data source (bits 0–2 and 6–7), for misses.
    pub data_src: u8,
}

/// Decodes the RAW body of an `ibs_op` sample: u32 caps, then the MSRs IbsOpCtl,
/// IbsOpRip, IbsOpData, IbsOpData2, IbsOpData3, IbsDcLinAd, IbsDcPhysAd, ...
/// as u64 each (Linux arch/x86/events/amd/ibs.c; bit layouts of amd-ibs.h).
pub fn parse_ibs_op(raw: &[u8]) -> Result<IbsOp, ProfileError> {
    let reg = |i: usize| -> Result<u64, ProfileError> {
        let at = 4 + 8 * i;
        raw.get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .ok_or_else(|| {
                ProfileError::Invalid(format!(
                    "IBS op record of {} bytes lacks register {i}",
                    raw.len()
                ))
            })
    };
    let (rip, data, data2, data3) = (reg(1)?, reg(2)?, reg(3)?, reg(4)?);
    let lin = reg(5)?;
    let bit = |w: u64, b: u32| (w >> b) & 1 == 1;
    let dc_miss = bit(data3, 7);
    Ok(IbsOp {
        // IbsOpData bit 38: op_rip_invalid.
        rip: (!bit(data, 38)).then_some(rip),
        load: bit(data3, 0),
        store: bit(data3, 1),
        dc_miss,
        l2_miss: bit(data3, 20),
        miss_latency: if dc_miss { (data3 >> 32) & 0xffff } else { 0 },
        // IbsOpData3 bit 17: dc_lin_addr_valid.
        lin_addr: bit(data3, 17).then_some(lin),
        data_src: ((data2 & 0x7) | ((data2 >> 6) & 0x3) << 3) as u8,
    })
}

impl IbsOp {
    /// The level that served the load, as for PEBS samples.
    pub fn level(&self) -> Option<String> {
        if !self.load {
            return None;
        }
        let l = if !self.dc_miss {
            "L1"
        } else if !self.l2_miss {
            "L2"
        } else {
            // Family 17h/19h data sources of IbsOpData2.
            match self.data_src {
                1 | 2 => "L3",
                3 => "RAM",
                4 | 5 => "remote cache",
                7 => "IO",
                _ => "L3",
            }
        };
        Some(l.to_string())
    }

    /// Fills the memory fields of a sample from this op.
    pub fn fill(&self, s: &mut Sample) {
        if let Some(rip) = self.rip {
            s.ip = rip;
        }
        s.addr = self.lin_addr;
        s.level = self.level();
        s.latency = (self.miss_latency > 0).then_some(self.miss_latency);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_src_words_name_levels() {
        // op = load (0x2), mem_lvl = HIT|L3 (0x42 << 5).
        assert_eq!(data_src_level(0x2 | (0x42 << 5)).as_deref(), Some("L3"));
        // mem_lvl_num = RAM (0xd << 33) takes precedence.
        let ram = 0x2 | (0x42 << 5) | (0xd << 33);
        assert_eq!(data_src_level(ram).as_deref(), Some("RAM"));
        assert_eq!(
            data_src_level(ram | (1 << 37)).as_deref(),
            Some("remote RAM")
        );
        // Not a load or store: nothing to say.
        assert_eq!(data_src_level(0x1 | (0x8 << 5)), None);
    }

    #[test]
    fn truncated_streams_are_errors_not_panics() {
        let mut rec = vec![];
        rec.extend(9u32.to_le_bytes());
        rec.extend(0u16.to_le_bytes());
        rec.extend(24u16.to_le_bytes());
        rec.extend(7u64.to_le_bytes()); // ip, then the stream ends early
        let e = parse_stream(&rec, sample_type::IP | sample_type::TID, |_, _| Ok(()));
        assert!(e.is_err());
        assert!(parse_ibs_op(&[0; 20]).is_err());
    }
}
