//! The interactive shell driven in a pseudo-terminal (expectrl): Ctrl-C cancels a
//! running query and the shell lives on, twice at an empty prompt leaves; history is
//! written as each statement runs; Tab completes tables and columns; long results go
//! through `$PAGER`; meta-commands and `exit` work.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use expectrl::{ControlCode, Eof, Regex, Session};

use common::run_ok;

/// A database with `nums(n)` holding 1..=rows.
fn database(dir: &Path, rows: usize) -> std::path::PathBuf {
    let db = dir.join("t.db");
    let values: Vec<String> = (1..=rows).map(|i| format!("({i})")).collect();
    let sql = format!(
        "CREATE TABLE nums (n INTEGER); INSERT INTO nums VALUES {}; CREATE TABLE lineitem_x (l_quantity INTEGER, l_comment VARCHAR)",
        values.join(",")
    );
    run_ok(&db, &["-c", &sql]);
    db
}

fn shell(dir: &Path, db: &Path, pager: &str) -> Session {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kura"));
    cmd.arg("--db")
        .arg(db)
        .env("KURA_LOG", "error")
        .env("KURA_HISTORY", dir.join("history"))
        .env("PAGER", pager)
        .env("TERM", "xterm");
    let mut s = Session::spawn(cmd).expect("spawn the shell");
    s.set_expect_timeout(Some(Duration::from_secs(30)));
    s.expect("kura>").expect("a prompt");
    s
}

#[test]
fn ctrl_c_cancels_the_running_query_and_history_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path(), 1500);
    run_ok(
        &db,
        &[
            "-c",
            "CREATE TABLE big AS SELECT a.n AS k FROM nums a, nums b",
        ],
    );
    let mut s = shell(dir.path(), &db, "cat");
    // 2.25 M rows each meeting 750: 1.7·10⁹ joined rows, minutes of work unless
    // cancelled (and the pipeline checks for cancellation between batches).
    s.send_line("SELECT count(*) FROM big x JOIN nums y ON x.k % 2 = y.n % 2;")
        .unwrap();
    // Past a second, a spinner shows the elapsed time.
    s.expect("running (Ctrl-C cancels) 00:00:01")
        .expect("a spinner on a query running longer than a second");
    let sent = Instant::now();
    s.send(ControlCode::EndOfText).unwrap();
    if let Err(e) = s.expect("Cancelled") {
        let mut buf = vec![0; 1 << 16];
        let n = s.try_read(&mut buf).unwrap_or(0);
        panic!(
            "the query was not cancelled ({e}):\n{}",
            String::from_utf8_lossy(&buf[..n])
        );
    }
    assert!(
        sent.elapsed() < Duration::from_secs(10),
        "cancel took {:?}",
        sent.elapsed()
    );
    // The shell is still there and answers the next statement (an answer no elapsed time
    // in "Cancelled after 1.042 s." can contain: "42" could, and then the prompt matched
    // was the one before this statement was read).
    s.send_line("SELECT 'answer:' || (40 + 2) AS answer;")
        .unwrap();
    s.expect("answer:42").unwrap();
    s.expect("kura>").unwrap();
    // History holds both statements already, before the shell exits.
    let history = std::fs::read_to_string(dir.path().join("history")).unwrap();
    assert!(history.contains("JOIN nums y ON"), "{history}");
    assert!(history.contains("(40 + 2) AS answer;"), "{history}");
    // Twice Ctrl-C at an empty prompt leaves.
    s.send(ControlCode::EndOfText).unwrap();
    s.expect("Ctrl-C again").unwrap();
    s.send(ControlCode::EndOfText).unwrap();
    s.expect(Eof).unwrap();
}

#[test]
fn tab_completes_tables_and_columns_and_meta_commands_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path(), 3);
    let mut s = shell(dir.path(), &db, "cat");
    s.send("SELECT l_quan\t").unwrap();
    s.expect("l_quantity").expect("column completed");
    s.send(" FROM linei\t").unwrap();
    s.expect("lineitem_x").expect("table completed");
    s.send_line(";").unwrap();
    s.expect("(0 rows)").unwrap();
    s.send_line("\\d lineitem_x").unwrap();
    s.expect("l_comment").unwrap();
    s.send_line(".tables").unwrap();
    s.expect("nums").unwrap();
    // Tab completes the common prefix and a second Tab lists the choices; it does
    // not pick one (cycling made `whe` WHEN).
    s.send("SELECT n FROM nums whe\t\t").unwrap();
    s.expect(Regex("when +where"))
        .expect("both keywords listed");
    s.send_line("re n = 2;").unwrap();
    s.expect("(1 row)").expect("the WHERE clause as typed");
    s.expect("kura>").unwrap();
    s.send(".ta\t").unwrap();
    s.expect(".tables").expect("dot-command completed");
    s.send_line("").unwrap();
    s.expect("lineitem_x").unwrap();
    s.expect("kura>").unwrap();
    s.send_line("SELECT n, NULL AS z FROM nums WHERE n = 1;")
        .unwrap();
    s.expect(Regex("1 +┆ ∅"))
        .expect("NULL shown as ∅ in a table");
    s.send_line("\\pset format csv").unwrap();
    s.expect("Output format is csv").unwrap();
    // The table's ∅ does not follow into CSV: NULL is an empty field there.
    s.send_line("SELECT n, NULL AS z, 'a,b' AS s FROM nums WHERE n = 1;")
        .unwrap();
    s.expect("\n1,,\"a,b\"").unwrap();
    s.expect("kura>").unwrap();
    s.send_line("\\pset format json").unwrap();
    s.expect("Output format is json").unwrap();
    s.send_line("SELECT NULL AS z;").unwrap();
    s.expect("{\"z\":null}").unwrap();
    s.expect("kura>").unwrap();
    s.send_line("exit").unwrap();
    s.expect(Eof).unwrap();
}

#[test]
fn long_results_go_through_the_pager_and_short_ones_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path(), 300);
    let mut s = shell(dir.path(), &db, "sed 's/^/PAGED:/'");
    s.send_line("SELECT 7 AS seven;").unwrap();
    let short = s.expect(Regex("Time: [0-9.]+ ms")).unwrap();
    assert!(
        !String::from_utf8_lossy(short.before()).contains("PAGED:"),
        "a one-row result must not be paged"
    );
    s.send_line("SELECT n FROM nums;").unwrap();
    s.expect("PAGED:│ 300")
        .expect("the last row, through the pager");
    s.expect("PAGED:(300 rows)").unwrap();
    s.expect("kura>").unwrap();
    s.send_line("\\q").unwrap();
    s.expect(Eof).unwrap();
}

#[test]
fn a_statement_in_continuation_still_takes_backslash_q() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path(), 3);
    let mut s = shell(dir.path(), &db, "cat");
    s.send_line(".help").unwrap();
    s.expect("expanded display").unwrap();
    s.send_line("SELECT 1").unwrap();
    s.expect("...").unwrap();
    // Inside a statement: exit answers with a hint and is not added to it, a
    // dot-command acts as at the prompt, \q leaves.
    s.send_line("exit").unwrap();
    s.expect("inside a statement: \\q quits").unwrap();
    s.expect("  ... ").unwrap();
    s.send_line(".tables").unwrap();
    s.expect("nums").unwrap();
    s.expect("  ... ").unwrap();
    s.send_line("\\q").unwrap();
    s.expect(Eof).unwrap();
}

#[test]
fn exit_quit_and_dot_commands_at_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path(), 3);
    for leave in ["quit", ".exit", "exit;"] {
        let mut s = shell(dir.path(), &db, "cat");
        s.send_line(".schema nums").unwrap();
        s.expect("Table \"nums\"").unwrap();
        s.expect("kura>").unwrap();
        s.send_line(leave).unwrap();
        s.expect(Eof)
            .unwrap_or_else(|e| panic!("{leave} did not leave: {e}"));
    }
}

#[test]
fn include_output_file_expanded_display_and_describe() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path(), 3);
    let script = dir.path().join("script.sql");
    std::fs::write(
        &script,
        "\\pset null '<null>'\nCREATE TABLE t2 (a INTEGER,\n  b VARCHAR);\nINSERT INTO t2 VALUES (1, NULL);\n",
    )
    .unwrap();
    let out = dir.path().join("out.csv");
    let mut s = shell(dir.path(), &db, "cat");
    s.send_line(format!("\\i {}", script.display())).unwrap();
    s.expect("INSERT 0 1").unwrap();
    s.send_line("DESCRIBE t2;").unwrap();
    s.expect(Regex("b +┆ VARCHAR +┆ YES")).unwrap();
    s.send_line("\\x on").unwrap();
    s.expect("Expanded display is on").unwrap();
    s.send_line("SELECT * FROM t2;").unwrap();
    s.expect("-[ RECORD 1 ]").unwrap();
    s.expect(Regex("b +\\| <null>")).unwrap();
    // Each line waits for its answer: typed-ahead input may be discarded when the
    // line editor takes the terminal back.
    s.send_line("\\x off").unwrap();
    s.expect("Expanded display is off").unwrap();
    s.send_line("\\pset format csv").unwrap();
    s.expect("Output format is csv").unwrap();
    s.send_line(format!("\\o {}", out.display())).unwrap();
    s.expect("Results go to").unwrap();
    s.send_line("SELECT a, 'x\"y' AS q FROM t2;").unwrap();
    s.expect(Regex("Time: [0-9.]+ ms")).unwrap();
    s.send_line("\\o").unwrap();
    s.expect("Results go to standard output").unwrap();
    s.expect("kura>").unwrap();
    // \d goes where results go, heading and all.
    let described = dir.path().join("d.txt");
    s.send_line(format!("\\o {}", described.display())).unwrap();
    s.expect("Results go to").unwrap();
    s.expect("kura>").unwrap();
    s.send_line("\\d t2").unwrap();
    s.expect("kura>").unwrap();
    s.send_line("\\o").unwrap();
    s.expect("Results go to standard output").unwrap();
    s.expect("kura>").unwrap();
    s.send_line("\\q").unwrap();
    s.expect(Eof).unwrap();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "a,q\n1,\"x\"\"y\"\n"
    );
    assert_eq!(
        std::fs::read_to_string(&described).unwrap(),
        "Table \"t2\" (1 row)\ncolumn,type,nullable\na,INTEGER,\"\"\nb,VARCHAR,\"\"\n"
    );
}

#[test]
fn a_pager_that_cannot_run_falls_back_to_printing() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path(), 300);
    let mut s = shell(dir.path(), &db, "kura-no-such-pager");
    s.send_line("SELECT n FROM nums;").unwrap();
    s.expect("(300 rows)").expect("the rows, printed directly");
    s.expect("kura>").unwrap();
    s.send_line("\\q").unwrap();
    s.expect(Eof).unwrap();
}
