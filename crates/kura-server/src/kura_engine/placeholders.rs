//! `$n` parameters in SQL text: counting them (outside quotes and comments),
//! so a Bind is checked against every placeholder the statement holds.

/// Calls `f(byte offset, length, n)` for each `$n` outside quotes and comments.
fn scan(sql: &str, mut f: impl FnMut(usize, usize, usize)) {
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 1;
            }
            b'$' if i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') => {
                let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                if digits > 0 {
                    if let Ok(n) = sql[i + 1..i + 1 + digits].parse::<usize>() {
                        f(i, digits + 1, n);
                    }
                    i += digits;
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// The number of parameters: the highest `$n`.
pub fn count(sql: &str) -> usize {
    let mut max = 0;
    scan(sql, |_, _, n| max = max.max(n));
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_highest_placeholder_outside_quotes() {
        assert_eq!(count("select $1, $2 where a = $1"), 2);
        assert_eq!(count("select '$3', \"$4\" -- $5\n, /* $6 */ $2"), 2);
        assert_eq!(count("select 1"), 0);
        assert_eq!(count("select a$1 from t"), 0);
    }
}
