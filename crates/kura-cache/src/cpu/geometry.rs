//! CPU cache geometry (size, ways, line size, sets) as Linux describes it under
//! `/sys/devices/system/cpu/cpu0/cache/index*/`; the root is a parameter so tests
//! read a fake tree.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::CacheError;

/// Where Linux describes CPU 0's caches.
pub const SYSFS_CACHE_DIR: &str = "/sys/devices/system/cpu/cpu0/cache";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheKind {
    Data,
    Instruction,
    Unified,
}

/// One cache: `size = sets × ways × line_size`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub level: u8,
    pub kind: CacheKind,
    pub size: u64,
    pub ways: u32,
    pub line_size: u32,
    pub sets: u32,
    /// The sets the hardware has: `sets` unless they are no power of two (a
    /// last-level cache split into hashed slices, e.g. 245,760 sets of a 300 MiB
    /// 20-way L3), which the model indexes by address bits and so rounds down.
    pub hardware_sets: u32,
}

impl Geometry {
    /// A cache of `size` bytes, `ways`-way set associative with `line_size`-byte
    /// lines; sets and line size must be powers of two.
    pub fn new(level: u8, size: u64, ways: u32, line_size: u32) -> Result<Self, CacheError> {
        let invalid = |m: String| Err(CacheError::InvalidConfig(m));
        if ways == 0 || !line_size.is_power_of_two() || ways > 64 {
            return invalid(format!(
                "cache geometry needs 1 to 64 ways and a power-of-two line size, got {ways} ways, {line_size}-byte lines"
            ));
        }
        let per_set = u64::from(ways) * u64::from(line_size);
        if size == 0 || (size / per_set) * per_set != size || !(size / per_set).is_power_of_two() {
            return invalid(format!(
                "a {size}-byte cache with {ways} ways of {line_size}-byte lines has no power-of-two number of sets"
            ));
        }
        Ok(Self {
            level,
            kind: if level == 1 {
                CacheKind::Data
            } else {
                CacheKind::Unified
            },
            size,
            ways,
            line_size,
            sets: (size / per_set) as u32,
            hardware_sets: (size / per_set) as u32,
        })
    }

    /// As [`Geometry::new`], but a cache whose set count is no power of two is
    /// modelled with the largest power of two below it (same ways and lines,
    /// smaller size); `hardware_sets` keeps the real count and
    /// [`Geometry::describe`] says so.
    pub fn modelled(level: u8, size: u64, ways: u32, line_size: u32) -> Result<Self, CacheError> {
        let per_set = u64::from(ways) * u64::from(line_size);
        let sets = size.checked_div(per_set).unwrap_or(0);
        if per_set == 0
            || sets == 0
            || sets * per_set != size
            || sets.is_power_of_two()
            || sets > u64::from(u32::MAX)
        {
            return Self::new(level, size, ways, line_size);
        }
        let rounded = 1u64 << sets.ilog2();
        let mut g = Self::new(level, rounded * per_set, ways, line_size)?;
        g.hardware_sets = sets as u32;
        Ok(g)
    }

    /// e.g. `L2 512 KiB, 8-way, 64 B lines, 1024 sets`.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "L{} {} KiB, {}-way, {} B lines, {} sets",
            self.level,
            self.size / 1024,
            self.ways,
            self.line_size,
            self.sets
        );
        if self.hardware_sets != self.sets {
            text.push_str(&format!(
                " (modelled: the hardware has {} sets, no power of two)",
                self.hardware_sets
            ));
        }
        text
    }
}

/// "32K", "32768K", "1M", "512" (bytes) as in sysfs `size` files.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let mult = match unit.trim() {
        "" => 1,
        "K" | "k" => 1 << 10,
        "M" | "m" => 1 << 20,
        "G" | "g" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

fn read_field(dir: &Path, name: &str) -> Result<String, CacheError> {
    let path = dir.join(name);
    fs::read_to_string(&path)
        .map(|s| s.trim().to_string())
        .map_err(|source| CacheError::Io { path, source })
}

fn bad(dir: &Path, name: &str, value: &str) -> CacheError {
    CacheError::BadTrace {
        path: dir.join(name),
        message: format!("unexpected value '{value}'"),
    }
}

fn number<T: std::str::FromStr>(dir: &Path, name: &str) -> Result<T, CacheError> {
    let v = read_field(dir, name)?;
    v.parse().map_err(|_| bad(dir, name, &v))
}

/// Every cache described under `root` (a `.../cpu0/cache` directory), ordered by
/// level, data before instruction. `number_of_sets` may be missing (it is then
/// derived); a size that disagrees with sets × ways × line is an error.
pub fn read_sysfs(root: &Path) -> Result<Vec<Geometry>, CacheError> {
    let entries = fs::read_dir(root).map_err(|source| CacheError::Io {
        path: root.to_path_buf(),
        source,
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("index"))
        })
        .collect();
    dirs.sort();
    let mut caches = Vec::new();
    for dir in &dirs {
        let level: u8 = number(dir, "level")?;
        let kind_text = read_field(dir, "type")?;
        let kind = match kind_text.as_str() {
            "Data" => CacheKind::Data,
            "Instruction" => CacheKind::Instruction,
            "Unified" => CacheKind::Unified,
            other => return Err(bad(dir, "type", other)),
        };
        let size_text = read_field(dir, "size")?;
        let size = parse_size(&size_text).ok_or_else(|| bad(dir, "size", &size_text))?;
        let ways: u32 = number(dir, "ways_of_associativity")?;
        let line_size: u32 = number(dir, "coherency_line_size")?;
        let mut geometry = Geometry::modelled(level, size, ways, line_size)?;
        geometry.kind = kind;
        if dir.join("number_of_sets").exists() {
            let sets: u32 = number(dir, "number_of_sets")?;
            if sets != geometry.hardware_sets {
                return Err(CacheError::BadTrace {
                    path: dir.join("number_of_sets"),
                    message: format!(
                        "{sets} sets disagree with size {size} / ({ways} ways × {line_size} B)"
                    ),
                });
            }
        }
        caches.push(geometry);
    }
    caches.sort_by_key(|g| (g.level, g.kind != CacheKind::Data));
    Ok(caches)
}

/// Writes one cache's directory (`indexN/level`, `type`, `size`, ...) of a sysfs
/// `cpu0/cache` layout under `root`: another machine's geometry for studies
/// (`--geometry DIR`) and tests; `kind` is `Data`, `Instruction` or `Unified`,
/// `size` as sysfs writes it (`32K`).
pub fn write_sysfs_cache(
    root: &Path,
    index: usize,
    level: u8,
    kind: &str,
    size: &str,
    ways: u32,
) -> std::io::Result<()> {
    let dir = root.join(format!("index{index}"));
    fs::create_dir_all(&dir)?;
    for (field, value) in [
        ("level", level.to_string()),
        ("type", kind.to_string()),
        ("size", size.to_string()),
        ("ways_of_associativity", ways.to_string()),
        ("coherency_line_size", "64".to_string()),
    ] {
        fs::write(dir.join(field), format!("{value}\n"))?;
    }
    Ok(())
}

/// The data-side hierarchy (L1d, L2, L3, ...): instruction caches dropped.
pub fn data_hierarchy(caches: &[Geometry]) -> Vec<Geometry> {
    caches
        .iter()
        .filter(|g| g.kind != CacheKind::Instruction)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_index(root: &Path, i: usize, fields: &[(&str, &str)]) {
        let dir = root.join(format!("index{i}"));
        fs::create_dir_all(&dir).unwrap();
        for (name, value) in fields {
            fs::write(dir.join(name), format!("{value}\n")).unwrap();
        }
    }

    fn fake_machine(root: &Path) {
        let cache = |level: &'static str, kind: &'static str, size, ways, sets| {
            vec![
                ("level", level),
                ("type", kind),
                ("size", size),
                ("ways_of_associativity", ways),
                ("coherency_line_size", "64"),
                ("number_of_sets", sets),
            ]
        };
        write_index(root, 0, &cache("1", "Data", "32K", "8", "64"));
        write_index(root, 1, &cache("1", "Instruction", "32K", "8", "64"));
        write_index(root, 2, &cache("2", "Unified", "512K", "8", "1024"));
        write_index(root, 3, &cache("3", "Unified", "32768K", "16", "32768"));
        fs::write(root.join("uevent"), "").unwrap();
    }

    #[test]
    fn a_sliced_llc_without_power_of_two_sets_is_modelled_below_it() {
        let dir = std::env::temp_dir().join(format!("kura-sliced-llc-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        // A 300 MiB, 20-way L3 of 245,760 sets, as a cloud machine described it.
        write_index(
            &dir,
            0,
            &[
                ("level", "3"),
                ("type", "Unified"),
                ("size", "307200K"),
                ("ways_of_associativity", "20"),
                ("coherency_line_size", "64"),
                ("number_of_sets", "245760"),
            ],
        );
        let caches = read_sysfs(&dir).unwrap();
        let g = &caches[0];
        assert_eq!((g.sets, g.hardware_sets, g.ways), (131_072, 245_760, 20));
        assert_eq!(g.size, 131_072 * 20 * 64);
        assert!(
            g.describe().contains("the hardware has 245760 sets"),
            "{}",
            g.describe()
        );
        // A set count that disagrees with the size is still an error.
        write_index(&dir, 0, &[("number_of_sets", "131072")]);
        assert!(read_sysfs(&dir).is_err());
        let _ = fs::remove_dir_all(&dir);
        // Constructing one by hand still asks for a power of two.
        assert!(Geometry::new(3, 307_200 * 1024, 20, 64).is_err());
    }

    #[test]
    fn reads_a_fake_sysfs_tree() {
        let dir = tempfile::tempdir().unwrap();
        fake_machine(dir.path());
        let caches = read_sysfs(dir.path()).unwrap();
        assert_eq!(caches.len(), 4);
        let data = data_hierarchy(&caches);
        assert_eq!(
            data.iter()
                .map(|g| (g.level, g.size, g.ways, g.sets))
                .collect::<Vec<_>>(),
            vec![
                (1, 32 << 10, 8, 64),
                (2, 512 << 10, 8, 1024),
                (3, 32 << 20, 16, 32768)
            ]
        );
        assert_eq!(data[0].kind, CacheKind::Data);
        assert_eq!(
            data[1].describe(),
            "L2 512 KiB, 8-way, 64 B lines, 1024 sets"
        );
    }

    #[test]
    fn inconsistent_or_missing_fields_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        fake_machine(dir.path());
        fs::write(dir.path().join("index2/number_of_sets"), "999\n").unwrap();
        let err = read_sysfs(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("index2/number_of_sets") && err.contains("999"),
            "{err}"
        );
        fs::write(dir.path().join("index2/number_of_sets"), "1024\n").unwrap();
        fs::write(dir.path().join("index3/size"), "lots\n").unwrap();
        let err = read_sysfs(dir.path()).unwrap_err().to_string();
        assert!(err.contains("index3/size") && err.contains("lots"), "{err}");
        fs::remove_file(dir.path().join("index3/size")).unwrap();
        assert!(read_sysfs(dir.path()).is_err());
        // number_of_sets is optional
        fake_machine(dir.path());
        fs::remove_file(dir.path().join("index0/number_of_sets")).unwrap();
        assert_eq!(read_sysfs(dir.path()).unwrap()[0].sets, 64);
        assert!(read_sysfs(&dir.path().join("nowhere")).is_err());
    }

    #[test]
    fn sizes_and_geometry_checks() {
        assert_eq!(parse_size("32K"), Some(32768));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
        // 12 ways are fine as long as the sets are a power of two
        assert_eq!(Geometry::new(3, 12 << 20, 12, 64).unwrap().sets, 16384);
        assert!(Geometry::new(2, 3 << 20, 8, 64).is_err());
        assert!(Geometry::new(1, 32 << 10, 8, 48).is_err());
    }
}
