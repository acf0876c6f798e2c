//! Instruction addresses of a traced run → function and source line, with
//! blazesym: each address is turned into an offset in the file mapped there (the
//! run's memory map is in its dump), then symbolized from that ELF file's symbols
//! and DWARF.

use std::collections::HashMap;
use std::path::Path;

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};

use super::child::Mapping;

/// Where an instruction is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    /// The function (as the symbol table names it, demangled, hash suffix cut).
    pub function: String,
    /// The file it was mapped from (its last component).
    pub module: String,
    /// `file:line` of the innermost inlined code, if the debug info says.
    pub line: Option<String>,
    /// The innermost inlined function, when not `function` itself.
    pub inlined: Option<String>,
}

/// `kura_exec::ops::scan::Scan::next::h0123456789abcdef` → without the hash.
fn tidy(name: &str) -> String {
    match name.rsplit_once("::h") {
        Some((head, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            head.to_string()
        }
        _ => name.to_string(),
    }
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}

/// Symbolizes `ips` (any order, no duplicates needed) against the run's `maps`.
/// Addresses outside any file mapping, or that the file cannot name, get a
/// location naming only what is known.
pub fn symbolize(ips: &[u64], maps: &[Mapping]) -> HashMap<u64, Location> {
    let mut files: Vec<&Mapping> = maps
        .iter()
        .filter(|m| m.path.starts_with('/') && m.perms.contains('x'))
        .collect();
    files.sort_by_key(|m| m.start);
    // Per file: the ips and their file offsets.
    let mut by_file: HashMap<&str, (Vec<u64>, Vec<u64>)> = HashMap::new();
    let mut out = HashMap::with_capacity(ips.len());
    for &ip in ips {
        let at = files.partition_point(|m| m.start <= ip);
        match at.checked_sub(1).map(|i| files[i]).filter(|m| ip < m.end) {
            Some(m) => {
                let e = by_file.entry(m.path.as_str()).or_default();
                e.0.push(ip);
                e.1.push(ip - m.start + m.offset);
            }
            None => {
                out.insert(
                    ip,
                    Location {
                        function: format!("{ip:#x}"),
                        module: "?".into(),
                        ..Location::default()
                    },
                );
            }
        }
    }
    let symbolizer = Symbolizer::builder()
        .enable_code_info(true)
        .enable_inlined_fns(true)
        .build();
    for (path, (ips, offsets)) in by_file {
        let module = file_name(path);
        let src = Source::Elf(Elf::new(path));
        let results = symbolizer
            .symbolize(&src, Input::FileOffset(&offsets))
            .unwrap_or_default();
        for (i, &ip) in ips.iter().enumerate() {
            let loc = match results.get(i) {
                Some(Symbolized::Sym(sym)) => {
                    let innermost = sym.inlined.last();
                    // As in sampled profiles: kura's innermost function and line.
                    let (function, code) = crate::symbolize::kura_frame(sym);
                    Location {
                        function: tidy(function),
                        module: module.clone(),
                        line: code.and_then(|c| {
                            c.line
                                .map(|l| format!("{}:{l}", Path::new(&c.file).display()))
                        }),
                        inlined: innermost.map(|f| tidy(&f.name)),
                    }
                }
                _ => Location {
                    function: format!("{module}+{:#x}", offsets[i]),
                    module: module.clone(),
                    ..Location::default()
                },
            };
            out.insert(ip, loc);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn a_function_to_find(x: u64) -> u64 {
        // Nothing inlined from elsewhere: its first instruction is its own line.
        if x > 5 {
            x - 1
        } else {
            x + 4
        }
    }

    #[test]
    fn this_test_binary_names_its_own_function() {
        let maps =
            super::super::child::parse_maps(&std::fs::read_to_string("/proc/self/maps").unwrap());
        let ip = a_function_to_find as fn(u64) -> u64 as usize as u64;
        assert_eq!(a_function_to_find(std::hint::black_box(2)), 6);
        let locs = symbolize(&[ip, 1], &maps);
        let loc = &locs[&ip];
        assert!(
            loc.function.ends_with("a_function_to_find"),
            "named {loc:?}"
        );
        assert!(
            loc.line
                .as_deref()
                .is_some_and(|l| l.contains("symbols.rs")),
            "{loc:?}"
        );
        assert_eq!(locs[&1].module, "?");
        assert_eq!(tidy("a::b::h0123456789abcdef"), "a::b");
        assert_eq!(tidy("a::hello"), "a::hello");
    }
}
