//! The server's one SQL scanner: sqlparser's tokenizer (PostgreSQL dialect).
//!
//! It finds the top-level semicolons that split a simple-protocol query string
//! into statements and the `$n` placeholders a Bind is checked against, reading
//! quotes, escape strings, dollar quotes and nested comments as the parser reads
//! them.
//!
//! The tokenizer reports where each token starts as a line and a column (1-based,
//! counted in chars); a cursor that only moves forward turns that into a byte
//! offset, so a scan is linear in the text. Only semicolons and placeholders are
//! kept: the tokens the tokenizer collects are replaced by ones without text, and
//! a long text is read in pieces of about 64 KiB (see [`scan`]), so the collected
//! tokens stay bounded by a piece rather than by the whole text.

use std::ops::Range;

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer, Whitespace, Word};

/// The statements of `sql` (trimmed, without the separating semicolons, empty
/// ones dropped). Semicolons inside quotes, dollar quotes and comments do not
/// split; a text that does not tokenize (an unterminated quote or comment) is
/// one statement, for the parser to refuse with its own error.
pub fn statements(sql: &str) -> Vec<&str> {
    match scan(sql) {
        Some(walk) => walk
            .statements
            .into_iter()
            .map(|r| sql[r].trim())
            .filter(|s| !s.is_empty())
            .collect(),
        None => {
            let s = sql.trim();
            if s.is_empty() {
                Vec::new()
            } else {
                vec![s]
            }
        }
    }
}

/// The number of parameters: the highest `$n` outside quotes and comments (0
/// when the text does not tokenize: the parser reports it).
pub fn placeholder_count(sql: &str) -> usize {
    scan(sql).map_or(0, |walk| walk.params)
}

/// `s` without leading whitespace and comments.
pub fn strip_leading_comments(mut s: &str) -> &str {
    loop {
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix("--") {
            s = rest.find('\n').map_or("", |p| &rest[p + 1..]);
        } else if let Some(rest) = s.strip_prefix("/*") {
            s = rest.find("*/").map_or("", |p| &rest[p + 2..]);
        } else {
            return s;
        }
    }
}

/// How many bytes one tokenizer run reads: a text is read in pieces of about
/// this size, so the tokens the tokenizer collects stay few.
const PIECE: usize = 64 * 1024;

/// How far before a piece's end the last token it keeps must start: deciding
/// where a token ends, the tokenizer looks at most 3 chars past it (an
/// exponent's `e+1`), and 64 bytes hold at least 16 chars.
const MARGIN: usize = 64;

/// What a scan of a whole text found, or `None` when it does not tokenize.
///
/// A piece is tokenized to its end, then what it found is kept up to the last
/// token that starts [`MARGIN`] bytes before that end and whose reading does not
/// depend on the token before it (see [`Walk::token`]): the tokens before it were
/// read as in the whole text, and the next piece starts with it. A piece without
/// such a token (one long string or comment) is read again twice as long.
fn scan(sql: &str) -> Option<Walk<'_>> {
    scan_in(sql, PIECE)
}

/// [`scan`] with pieces of `piece` bytes.
fn scan_in(sql: &str, piece: usize) -> Option<Walk<'_>> {
    let dialect = PostgreSqlDialect {};
    let mut walk = Walk::new(sql);
    let mut buf = Vec::new();
    let mut start = 0;
    let mut want = piece;
    while start < sql.len() {
        let mut end = start.saturating_add(want).min(sql.len());
        while !sql.is_char_boundary(end) {
            end += 1;
        }
        buf.clear();
        walk.begin_piece(start, end);
        let read = Tokenizer::new(&dialect, &sql[start..end])
            .with_unescape(false)
            .tokenize_with_location_into_buf_with_mapper(&mut buf, |t| walk.token(t));
        walk.most_tokens = walk.most_tokens.max(buf.len());
        if end == sql.len() {
            read.ok()?;
            break;
        }
        let resume = walk.roll_back();
        if resume > start {
            start = resume;
            want = piece;
        } else {
            want = (end - start).saturating_mul(2);
        }
    }
    walk.finish();
    Some(walk)
}

/// The state before a token a piece may end at, to go back to once the piece
/// has been read.
#[derive(Clone, Copy)]
struct Checkpoint {
    /// Where the token starts.
    at: usize,
    statements: usize,
    stmt_start: usize,
    filled: bool,
    params: usize,
}

/// A scan in progress: the cursor, and what was found so far.
struct Walk<'a> {
    sql: &'a str,
    /// The cursor: a byte offset into `sql` and the line and column (as the
    /// tokenizer counts them from the start of the current piece) it is at.
    pos: usize,
    line: u64,
    column: u64,
    /// Chars the cursor moved over, all pieces together.
    steps: usize,
    /// The most tokens one piece held.
    most_tokens: usize,
    /// Where the current piece ends.
    piece_end: usize,
    /// Whether the previous token was a word or a period.
    after_word: bool,
    /// Byte ranges of the statements that hold a token other than whitespace
    /// and comments.
    statements: Vec<Range<usize>>,
    /// Where the current statement starts, and whether it holds such a token.
    stmt_start: usize,
    filled: bool,
    /// The highest `$n` so far.
    params: usize,
    checkpoint: Checkpoint,
}

impl<'a> Walk<'a> {
    fn new(sql: &'a str) -> Self {
        Walk {
            sql,
            pos: 0,
            line: 1,
            column: 1,
            steps: 0,
            most_tokens: 0,
            piece_end: 0,
            after_word: false,
            statements: Vec::new(),
            stmt_start: 0,
            filled: false,
            params: 0,
            checkpoint: Checkpoint {
                at: 0,
                statements: 0,
                stmt_start: 0,
                filled: false,
                params: 0,
            },
        }
    }

    fn save(&self, at: usize) -> Checkpoint {
        Checkpoint {
            at,
            statements: self.statements.len(),
            stmt_start: self.stmt_start,
            filled: self.filled,
            params: self.params,
        }
    }

    /// A piece `start..end` is read: the tokenizer counts lines and columns
    /// from `start`.
    fn begin_piece(&mut self, start: usize, end: usize) {
        self.pos = start;
        self.line = 1;
        self.column = 1;
        self.piece_end = end;
        self.after_word = false;
        self.checkpoint = self.save(start);
    }

    /// Back to the last token the piece may end at; returns where it starts
    /// (the piece's start when there was none).
    fn roll_back(&mut self) -> usize {
        let cp = self.checkpoint;
        self.statements.truncate(cp.statements);
        self.stmt_start = cp.stmt_start;
        self.filled = cp.filled;
        self.params = cp.params;
        cp.at
    }

    /// Moves the cursor forward to `to`, a char at a time, as the tokenizer
    /// counts: a newline starts the next line at column 1.
    fn advance(&mut self, to: Location) {
        let mut chars = self.sql[self.pos..].chars();
        while (self.line, self.column) < (to.line, to.column) {
            let Some(c) = chars.next() else { break };
            self.pos += c.len_utf8();
            self.steps += 1;
            if c == '\n' {
                self.line += 1;
                self.column = 1;
            } else {
                self.column += 1;
            }
        }
    }

    /// Notes one token (given in order) and hands the tokenizer back a small one
    /// in its place.
    fn token(&mut self, t: TokenWithSpan) -> TokenWithSpan {
        self.advance(t.span.start);
        let at = self.pos;
        // The tokenizer reads the token before only for a token that starts
        // with a digit or a period (`a._b`): elsewhere a fresh tokenizer reads
        // on from here as this one does.
        let fresh =
            !self.after_word || !matches!(self.sql.as_bytes().get(at), Some(b'0'..=b'9' | b'.'));
        if fresh && at + MARGIN <= self.piece_end {
            self.checkpoint = self.save(at);
        }
        self.after_word = matches!(t.token, Token::Word(_) | Token::Period);
        match &t.token {
            Token::SemiColon => self.end_statement(at),
            Token::Whitespace(_) => {}
            Token::Placeholder(p) => {
                self.filled = true;
                let n = p
                    .strip_prefix('$')
                    .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|d| d.parse::<usize>().ok());
                if let Some(n) = n {
                    self.params = self.params.max(n);
                }
            }
            _ => self.filled = true,
        }
        TokenWithSpan {
            token: small(t.token),
            span: t.span,
        }
    }

    /// The current statement ends at byte `end`.
    fn end_statement(&mut self, end: usize) {
        if self.filled {
            self.statements.push(self.stmt_start..end);
        }
        self.stmt_start = end + 1;
        self.filled = false;
    }

    /// The text has been read to its end.
    fn finish(&mut self) {
        if self.stmt_start < self.sql.len() {
            self.end_statement(self.sql.len());
        }
    }
}

/// A token without its text, in the place of `t` among the tokens read: the
/// tokenizer looks back at the previous token only to see whether it was a word
/// or a period (`a._b`, numeric-prefixed identifiers), so those stay what they
/// were.
fn small(t: Token) -> Token {
    match t {
        Token::Word(_) => Token::Word(Word {
            value: String::new(),
            quote_style: None,
            keyword: Keyword::NoKeyword,
        }),
        Token::Period => Token::Period,
        _ => Token::Whitespace(Whitespace::Space),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_top_level_semicolons() {
        assert_eq!(
            statements("select 1; select 2;"),
            vec!["select 1", "select 2"]
        );
        assert_eq!(
            statements("select ';' ; select 'it''s;'"),
            vec!["select ';'", "select 'it''s;'"]
        );
        assert_eq!(
            statements("select 1 -- a;b\n; /* c;d */ select \"x;\""),
            vec!["select 1 -- a;b", "/* c;d */ select \"x;\""]
        );
        assert_eq!(
            statements("select $$a;b$$, $t$;$t$; select $1"),
            vec!["select $$a;b$$, $t$;$t$", "select $1"]
        );
        assert!(statements(" ; ;\n-- only a comment\n").is_empty());
    }

    #[test]
    fn strips_comments() {
        assert_eq!(strip_leading_comments("-- x\n /* y */ BEGIN"), "BEGIN");
        assert_eq!(strip_leading_comments("/* unterminated"), "");
    }

    #[test]
    fn counts_the_highest_placeholder_outside_quotes() {
        assert_eq!(placeholder_count("select $1, $2 where a = $1"), 2);
        assert_eq!(
            placeholder_count("select '$3', \"$4\" -- $5\n, /* $6 */ $2"),
            2
        );
        assert_eq!(placeholder_count("select 1"), 0);
        assert_eq!(placeholder_count("select a$1 from t"), 0);
    }

    #[test]
    fn reads_quotes_escapes_and_comments_as_postgresql() {
        // An escape string's \' does not end it.
        assert_eq!(
            statements("select E'a\\';b'; select 2"),
            vec!["select E'a\\';b'", "select 2"]
        );
        // Comments nest.
        assert_eq!(
            statements("select 1 /* x /* y; */ ; */; select 2"),
            vec!["select 1 /* x /* y; */ ; */", "select 2"]
        );
        assert!(statements("/* a /* b */ ; */ ;").is_empty());
        // Dollar quotes with tags, and a tag's lookalike inside.
        assert_eq!(
            statements("select $fn$ a; $x$ b; $fn$; select $$;$$"),
            vec!["select $fn$ a; $x$ b; $fn$", "select $$;$$"]
        );
        // Doubled quotes in strings and quoted identifiers.
        assert_eq!(
            statements("select 'a'';b', \"c\"\";d\"; select 3"),
            vec!["select 'a'';b', \"c\"\";d\"", "select 3"]
        );
        // Across lines and wide characters.
        assert_eq!(
            statements("select 'é;ü'\r\n;\n  select '→';select 4"),
            vec!["select 'é;ü'", "select '→'", "select 4"]
        );
    }

    #[test]
    fn a_text_that_does_not_tokenize_is_one_statement() {
        assert_eq!(
            statements("select 1; select 'a; select 2"),
            vec!["select 1; select 'a; select 2"]
        );
        assert_eq!(
            statements(" select 1; /* a; /* b */ ; "),
            vec!["select 1; /* a; /* b */ ;"]
        );
        assert_eq!(placeholder_count("select $1; select '$2"), 0);
    }

    #[test]
    fn placeholders_only_outside_quotes_comments_and_dollar_quotes() {
        assert_eq!(
            placeholder_count(
                "select $2, E'$7\\'$8', 'x''$9', $$ $5 $$, $q$ $6 $q$ /* $3 /* */ $4 */ -- $5"
            ),
            2
        );
        assert_eq!(placeholder_count("select $10 + $3"), 10);
        // After an identifier char, `$` is part of the identifier.
        assert_eq!(placeholder_count("select a$1, _$2, x1$3 from t"), 0);
    }

    /// Script text of `n` statements whose semicolons sit in strings, comments,
    /// dollar quotes and escape strings, so pieces are cut inside them.
    fn script(n: usize) -> (String, Vec<String>) {
        let shapes = [
            "select 'a;b;c'",
            "select 1 -- x;y",
            "select $$;;$$, $t$;$t$",
            "select E'\\';'",
            "/* a; /* b; */ ; */ select 2",
            "select \"c;\"\"d\" from t",
            "select $1",
        ];
        let stmts: Vec<String> = (0..n)
            .map(|i| {
                let s = shapes[i % shapes.len()];
                let pad = ";".repeat(i % 5);
                if s.contains("--") {
                    format!("{s}{pad} {i}")
                } else {
                    format!("{s} /*{pad}*/ , {i}")
                }
            })
            .collect();
        let mut text = String::new();
        for s in &stmts {
            text.push_str(s);
            text.push_str(if s.contains("--") { "\n;" } else { ";\n" });
        }
        (text, stmts)
    }

    #[test]
    fn pieces_cut_inside_quotes_and_comments_read_as_one_text() {
        let (text, stmts) = script(60_000);
        assert!(text.len() > 16 * PIECE);
        let got = statements(&text);
        assert_eq!(got.len(), stmts.len());
        for (g, s) in got.iter().zip(&stmts) {
            let s = s.trim();
            assert_eq!(g, &s);
        }
        assert_eq!(placeholder_count(&text), 1);
        // Pieces are read again from their last kept token only.
        let walk = scan(&text).unwrap();
        let chars = text.chars().count();
        assert!(chars < walk.steps && walk.steps <= chars + chars / 100);
        assert!(walk.most_tokens <= PIECE);
        // An unterminated quote at the very end still makes it one statement.
        let broken = format!("{text} select 'open");
        assert_eq!(statements(&broken), vec![broken.trim()]);
    }

    /// What a scan found: the statements' ranges and the highest `$n`.
    fn found(w: Option<Walk<'_>>) -> Option<(Vec<Range<usize>>, usize)> {
        w.map(|w| (w.statements, w.params))
    }

    #[test]
    fn any_piece_size_reads_as_the_whole_text() {
        let texts = [
            "select 1e+5, 2E-3, 3e, 4.5e+, .5, 6., t._a, t.\"_b\", 7::int, u&'x;', U&\"y\", \
             x'ff', b'01', e'\\';', n'z;', $1 + $22, a$3, 1.e5, 8..9, $$x;$$, $q$;$q$; \
             select a<->b, c<-d, -- c;\n /* d /* e; */ ; */ 'f''g;', \"h\"\"i;\"; select 'é→😀;', 9",
            "select 1; select 'unterminated",
            "select t._x; select 1 /* open",
            "select 1, 2; select $$ never closed",
        ];
        for text in texts {
            let text = text.repeat(6);
            let whole = found(scan_in(&text, usize::MAX));
            for piece in [1, 16, 65, 66, 70, 77, 90, 101, 128, 200, 333] {
                assert_eq!(found(scan_in(&text, piece)), whole, "piece {piece}: {text}");
            }
        }
        // The first text tokenizes; the others do not.
        assert!(found(scan_in(&texts[0].repeat(6), usize::MAX)).is_some());
    }

    #[test]
    fn long_statements_are_read_in_pieces() {
        for text in [
            format!("select {}", vec!["1"; 100_000].join(",")),
            format!("select {}", vec!["a"; 100_000].join(".")),
            format!("select {}1{}", "(".repeat(100_000), ")".repeat(100_000)),
            format!("select '{}', 1", "x;".repeat(100_000)),
        ] {
            let walk = scan(&text).unwrap();
            assert_eq!(walk.statements, vec![0..text.len()]);
            assert!(walk.most_tokens <= PIECE, "{}", walk.most_tokens);
        }
    }

    #[test]
    fn the_cursor_walks_each_char_about_once() {
        // One line of 200,000 tokens, and many short lines.
        let line = format!("select {}", vec!["1"; 100_000].join(","));
        let walk = scan(&line).unwrap();
        let chars = line.chars().count();
        assert!(walk.steps <= chars + chars / 100);
        assert_eq!(walk.statements.len(), 1);
        let lines = "select 'é', $1;\n".repeat(50_000);
        let walk = scan(&lines).unwrap();
        let chars = lines.chars().count();
        assert!(walk.steps <= chars + chars / 100);
        assert_eq!(walk.statements.len(), 50_000);
        assert_eq!(walk.params, 1);
    }
}
