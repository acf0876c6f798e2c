//! Instruction pointers to functions and source lines: blazesym over this
//! process's own mappings (kura's release build keeps line tables, debug = 1),
//! behind a small trait so that reports can be tested with a fixed symbol table.

use std::collections::HashMap;

use blazesym::symbolize::source::{Process, Source};
use blazesym::symbolize::{Input, Symbolizer};
use blazesym::Pid;

/// Where an instruction is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The function (demangled, without Rust's hash suffix), or `[unknown]` /
    /// the module's name when there is no symbol.
    pub function: String,
    /// `file:line` where line tables say, of the innermost inlined call.
    pub line: Option<String>,
}

/// Turns addresses into frames.
pub trait Symbolize {
    fn frames(&mut self, ips: &[u64]) -> Vec<Frame>;
}

/// Rust symbols end in `::h` and 16 hex digits, which only make reports wider.
pub fn strip_hash(name: &str) -> &str {
    match name.rfind("::h") {
        Some(i) if name.len() - i == 19 && name[i + 3..].bytes().all(|b| b.is_ascii_hexdigit()) => {
            &name[..i]
        }
        _ => name,
    }
}

/// A function of kura's own crates (also a trait method of one of its types).
pub fn is_kura(name: &str) -> bool {
    name.trim_start_matches('<').starts_with("kura")
}

/// The path relative to the workspace when the file is one of kura's crates
/// (`crates/kura-exec/src/...`), else the file name: no machine's paths in reports.
fn short_path(path: &std::path::Path) -> String {
    let text = path.to_string_lossy();
    if let Some(i) = text.find("crates/kura") {
        return text[i..].to_string();
    }
    if let Some(i) = text.find("/library/") {
        return format!("std{}", &text[i + "/library".len()..]);
    }
    path.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| text.into_owned())
}

/// Whose work a symbolized address is: the innermost function of kura's own
/// crates in the inline chain (generic std code — iterators, Vec building — runs
/// kura's closures inlined into it), else the symbol itself; and the innermost
/// source location in kura's code (an inlined std helper's line says little),
/// else the innermost one.
pub fn kura_frame<'a>(
    sym: &'a blazesym::symbolize::Sym<'a>,
) -> (&'a str, Option<&'a blazesym::symbolize::CodeInfo<'a>>) {
    let mut places: Vec<_> = sym
        .inlined
        .iter()
        .rev()
        .filter_map(|f| f.code_info.as_ref())
        .collect();
    places.extend(sym.code_info.as_deref());
    let code = places
        .iter()
        .find(|c| c.to_path().to_string_lossy().contains("crates/kura"))
        .or(places.first())
        .copied();
    let function = sym
        .inlined
        .iter()
        .rev()
        .map(|f| f.name.as_ref())
        .chain(std::iter::once(sym.name.as_ref()))
        .find(|n| is_kura(n))
        .unwrap_or(&sym.name);
    (function, code)
}

/// blazesym over the calling process, with a cache (samples repeat addresses).
pub struct ProcessSymbolizer {
    symbolizer: Symbolizer,
    cache: HashMap<u64, Frame>,
}

impl Default for ProcessSymbolizer {
    fn default() -> Self {
        ProcessSymbolizer {
            symbolizer: Symbolizer::builder()
                .enable_code_info(true)
                .enable_inlined_fns(true)
                .enable_demangling(true)
                .build(),
            cache: HashMap::new(),
        }
    }
}

impl Symbolize for ProcessSymbolizer {
    fn frames(&mut self, ips: &[u64]) -> Vec<Frame> {
        let mut missing: Vec<u64> = ips
            .iter()
            .copied()
            .filter(|ip| !self.cache.contains_key(ip))
            .collect();
        missing.sort_unstable();
        missing.dedup();
        if !missing.is_empty() {
            let src = Source::Process(Process::new(Pid::Slf));
            let syms = self
                .symbolizer
                .symbolize(&src, Input::AbsAddr(&missing))
                .unwrap_or_default();
            for (i, ip) in missing.iter().enumerate() {
                let frame = match syms.get(i).and_then(|s| s.as_sym()) {
                    Some(sym) => {
                        let (function, code) = kura_frame(sym);
                        Frame {
                            function: strip_hash(function).to_string(),
                            line: code.and_then(|c| {
                                c.line.map(|l| format!("{}:{l}", short_path(&c.to_path())))
                            }),
                        }
                    }
                    None => Frame {
                        function: "[unknown]".into(),
                        line: None,
                    },
                };
                self.cache.insert(*ip, frame);
            }
        }
        ips.iter()
            .map(|ip| {
                self.cache.get(ip).cloned().unwrap_or(Frame {
                    function: "[unknown]".into(),
                    line: None,
                })
            })
            .collect()
    }
}

/// A fixed table of (start address, function, line): each address belongs to the
/// entry with the greatest start at or below it (tests, recorded samples).
pub struct TableSymbolizer(pub Vec<(u64, String, Option<String>)>);

impl Symbolize for TableSymbolizer {
    fn frames(&mut self, ips: &[u64]) -> Vec<Frame> {
        self.0.sort_by_key(|e| e.0);
        ips.iter()
            .map(|ip| match self.0.partition_point(|e| e.0 <= *ip) {
                0 => Frame {
                    function: "[unknown]".into(),
                    line: None,
                },
                i => Frame {
                    function: self.0[i - 1].1.clone(),
                    line: self.0[i - 1].2.clone(),
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn a_function_with_a_name(x: u64) -> u64 {
        std::hint::black_box(x.wrapping_mul(3))
    }

    #[test]
    fn own_functions_resolve_to_their_names_and_lines() {
        std::hint::black_box(a_function_with_a_name(2));
        let ip = a_function_with_a_name as *const () as u64;
        let mut s = ProcessSymbolizer::default();
        let f = &s.frames(&[ip, ip])[0];
        assert!(f.function.ends_with("a_function_with_a_name"), "{f:?}");
        let line = f.line.as_deref().expect("line tables");
        assert!(
            line.starts_with("crates/kura-profile/src/symbolize.rs:"),
            "{line}"
        );
    }

    #[test]
    fn hashes_are_stripped_and_tables_look_up_ranges() {
        assert_eq!(strip_hash("kura::x::h0123456789abcdef"), "kura::x");
        assert_eq!(strip_hash("kura::hash"), "kura::hash");
        let mut t = TableSymbolizer(vec![(0x2000, "b".into(), None), (0x1000, "a".into(), None)]);
        let f: Vec<String> = t
            .frames(&[0x500, 0x1000, 0x1fff, 0x2004])
            .into_iter()
            .map(|f| f.function)
            .collect();
        assert_eq!(f, ["[unknown]", "a", "a", "b"]);
    }
}
