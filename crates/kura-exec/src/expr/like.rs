//! SQL LIKE patterns (`%` any run, `_` one character), compiled once into the common
//! shapes — exact, prefix, suffix, contains — with a general matcher for the rest.

use memchr::memmem::Finder;

/// A compiled LIKE pattern.
#[derive(Debug, Clone)]
pub struct LikePattern {
    source: String,
    shape: Shape,
    /// A SIMD substring searcher for each unanchored piece, built once: building
    /// one per row cost TPC-H Q13's `'%special%requests%'` half its scan.
    finders: Vec<Finder<'static>>,
}

/// Patterns are equal when written alike (the rest is compiled from it).
impl PartialEq for LikePattern {
    fn eq(&self, other: &LikePattern) -> bool {
        self.source == other.source
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Exact(Vec<u8>),
    Prefix(Vec<u8>),
    Suffix(Vec<u8>),
    Contains(Vec<u8>),
    /// Literal pieces separated by `%`, no `_`: match them in order.
    Pieces {
        parts: Vec<Vec<u8>>,
        anchored_start: bool,
        anchored_end: bool,
    },
    General(Vec<char>),
}

impl LikePattern {
    pub fn new(pattern: &str) -> LikePattern {
        let has_underscore = pattern.contains('_') || pattern.contains('\\');
        let shape = if has_underscore {
            Shape::General(pattern.chars().collect())
        } else {
            let parts: Vec<&str> = pattern.split('%').collect();
            let anchored_start = !pattern.starts_with('%');
            let anchored_end = !pattern.ends_with('%');
            let inner: Vec<Vec<u8>> = parts
                .iter()
                .filter(|p| !p.is_empty())
                .map(|p| p.as_bytes().to_vec())
                .collect();
            match (parts.len(), anchored_start, anchored_end, inner.len()) {
                (1, _, _, _) => Shape::Exact(pattern.as_bytes().to_vec()),
                (2, true, false, 1) => Shape::Prefix(inner[0].clone()),
                (2, false, true, 1) => Shape::Suffix(inner[0].clone()),
                (3, false, false, 1) => Shape::Contains(inner[0].clone()),
                _ => Shape::Pieces {
                    parts: inner,
                    anchored_start,
                    anchored_end,
                },
            }
        };
        let finders = match &shape {
            Shape::Contains(p) => vec![Finder::new(p).into_owned()],
            Shape::Pieces { parts, .. } => {
                parts.iter().map(|p| Finder::new(p).into_owned()).collect()
            }
            _ => Vec::new(),
        };
        LikePattern {
            source: pattern.to_string(),
            shape,
            finders,
        }
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// The fixed prefix every match starts with (for zone-map pruning), if any.
    pub fn literal_prefix(&self) -> Option<&[u8]> {
        match &self.shape {
            Shape::Exact(p) | Shape::Prefix(p) => Some(p),
            _ => None,
        }
    }

    pub fn matches(&self, s: &[u8]) -> bool {
        match &self.shape {
            Shape::Exact(p) => s == p.as_slice(),
            Shape::Prefix(p) => s.starts_with(p),
            Shape::Suffix(p) => s.ends_with(p),
            Shape::Contains(_) => self.finders[0].find(s).is_some(),
            Shape::Pieces {
                parts,
                anchored_start,
                anchored_end,
            } => pieces_match(s, parts, &self.finders, *anchored_start, *anchored_end),
            Shape::General(p) => {
                let text: Vec<char> = String::from_utf8_lossy(s).chars().collect();
                general_match(&text, p)
            }
        }
    }
}

fn pieces_match(
    s: &[u8],
    parts: &[Vec<u8>],
    finders: &[Finder<'static>],
    anchored_start: bool,
    anchored_end: bool,
) -> bool {
    let mut pos = 0;
    for (i, p) in parts.iter().enumerate() {
        if i == 0 && anchored_start {
            if !s.starts_with(p) {
                return false;
            }
            pos = p.len();
        } else if i == parts.len() - 1 && anchored_end {
            return s.len() >= pos + p.len() && s.ends_with(p);
        } else {
            match finders[i].find(&s[pos..]) {
                Some(k) => pos += k + p.len(),
                None => return false,
            }
        }
    }
    !anchored_end || pos == s.len() || parts.is_empty()
}

/// Backtracking matcher for patterns with `_` and escapes (`\%`, `\_`).
fn general_match(t: &[char], p: &[char]) -> bool {
    let (mut ti, mut pi) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '\\' && pi + 1 < p.len() {
            if t[ti] == p[pi + 1] {
                ti += 1;
                pi += 2;
                continue;
            }
        } else if pi < p.len() && p[pi] == '%' {
            star = Some((pi, ti));
            pi += 1;
            continue;
        } else if pi < p.len() && (p[pi] == '_' || p[pi] == t[ti]) {
            ti += 1;
            pi += 1;
            continue;
        }
        match star {
            Some((sp, st)) => {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    while pi < p.len() && p[pi] == '%' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        LikePattern::new(p).matches(s.as_bytes())
    }

    #[test]
    fn shapes() {
        assert!(m("abc", "abc"));
        assert!(!m("abc", "abcd"));
        assert!(m("forest%", "forest green"));
        assert!(!m("forest%", "a forest"));
        assert!(m("%BRASS", "LARGE BRASS"));
        assert!(!m("%BRASS", "BRASS X"));
        assert!(m("%green%", "dark green blue"));
        assert!(m("%special%requests%", "x special y requests z"));
        assert!(!m("%special%requests%", "requests special"));
        assert!(m("a%b%c", "aXbYc"));
        assert!(!m("a%b%c", "aXbYcd"));
        assert!(m("a%c", "ac"));
        assert!(!m("ab%bc", "abc"));
        assert!(m("a_c", "abc"));
        assert!(!m("a_c", "ac"));
        assert!(m("%_%", "x"));
        assert!(!m("%_%", ""));
        assert!(m("100\\%", "100%"));
        assert!(!m("100\\%", "1000"));
        assert!(m("%", ""));
    }
}
