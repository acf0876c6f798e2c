#!/usr/bin/env python3
"""Cross-checks kura's sqllogictest files against PostgreSQL, the reference semantics.

The expected results in tests/slt/ are derived by reasoning; this script runs the same
records on a PostgreSQL server through `psql` to confirm them. Each file runs in a
fresh database. Records marked `onlyif kura` (kura-only syntax or settings) are
skipped, as are records marked `skipif postgres`. For `statement error` / `query error`
records only the failure itself is checked: kura's messages are its own. Column type
letters are not checked (PostgreSQL's types differ, e.g. numeric averages).

Usage (from the repository root, with a server reachable by psql):

    python3 tools/slt_postgres.py --host localhost --port 5432 --user postgres tests/slt/*.slt

`$DATA_DIR` in SQL is replaced by the absolute path of tests/data (as the kura harness
does), so COPY can read the test files. Exit status is non-zero on any difference.

With `--sessions`, the records of a file run in order in one psql session per
sqllogictest `connection` (for files whose records depend on each other:
transactions, savepoints), and an expected SQLSTATE (`statement error (25P02)`) is
checked too.
"""

import argparse
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIR = os.path.join(REPO, "tests", "data")


class Record:
    def __init__(self, kind, line, sql, expect_error=False, sort=None, results=None, conditions=(),
                 connection="default", sqlstate=None):
        self.kind, self.line, self.sql = kind, line, sql
        self.expect_error, self.sort, self.results = expect_error, sort, results or []
        self.conditions = list(conditions)
        self.connection, self.sqlstate = connection, sqlstate


def parse(path):
    """A small sqllogictest parser: statement/query records, conditions, `----` results."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    records, conditions, i = [], [], 0
    connection = "default"
    while i < len(lines):
        line = lines[i].strip()
        start = i + 1
        i += 1
        if not line or line.startswith("#"):
            continue
        words = line.split()
        if words[0] in ("skipif", "onlyif"):
            conditions.append((words[0], words[1]))
            continue
        if words[0] == "connection" and len(words) > 1:
            connection = words[1]
        if words[0] in ("control", "halt", "hash-threshold", "sleep", "include", "connection"):
            conditions = []
            continue
        if words[0] not in ("statement", "query"):
            sys.exit(f"{path}:{start}: cannot parse {line!r}")
        sql_lines = []
        while i < len(lines) and lines[i].strip() and lines[i].strip() != "----":
            sql_lines.append(lines[i])
            i += 1
        results = []
        if i < len(lines) and lines[i].strip() == "----":
            i += 1
            while i < len(lines) and lines[i].strip():
                results.append(lines[i])
                i += 1
        expect_error = len(words) > 1 and words[1] == "error"
        sort = None
        if words[0] == "query" and not expect_error and len(words) > 2:
            sort = words[2]
        sqlstate = None
        if expect_error and len(words) == 3 and re.fullmatch(r"\([0-9A-Z]{5}\)", words[2]):
            sqlstate = words[2][1:-1]
        records.append(Record(words[0], start, "\n".join(sql_lines), expect_error, sort, results, conditions,
                              connection, sqlstate))
        conditions = []
    return records


def applies(record):
    for cond, label in record.conditions:
        if cond == "onlyif" and label != "postgres":
            return False
        if cond == "skipif" and label == "postgres":
            return False
    return True


def psql(args, db, sql):
    cmd = ["psql", "-X", "-q", "-A", "-t", "-F", "\x1f", "-P", "null=NULL", "-v", "ON_ERROR_STOP=1",
           "-h", args.host, "-p", str(args.port), "-U", args.user, "-d", db, "-c", sql]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr.strip()


class Session:
    """One psql process kept open: statements run one after another in its session."""

    def __init__(self, args, db):
        cmd = ["psql", "-X", "-q", "-A", "-t", "-F", "\x1f", "-P", "null=NULL",
               "-h", args.host, "-p", str(args.port), "-U", args.user, "-d", db]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.count = 0
        self.run("\\set VERBOSITY verbose")

    def run(self, sql):
        """Runs `sql`; returns (SQLSTATE of its error or None, the result lines)."""
        self.count += 1
        marker = f"__slt_postgres_done_{self.count}__"
        body = sql if sql.startswith("\\") else sql.rstrip().rstrip(";") + ";"
        self.p.stdin.write(body + "\n\\echo " + marker + "\n")
        self.p.stdin.flush()
        lines, state = [], None
        for line in self.p.stdout:
            line = line.rstrip("\n")
            if line == marker:
                break
            m = re.search(r"ERROR:\s+([0-9A-Z]{5}):", line)
            if m:
                state = m.group(1)
            # Messages (verbose: with their LOCATION) are not result rows.
            if not (line.startswith("psql:") or line.startswith("LOCATION:")):
                lines.append(line)
        return state, "\n".join(lines)

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def check_in_sessions(args, path, db):
    failures, sessions = 0, {}
    try:
        for r in parse(path):
            if not applies(r):
                continue
            if r.connection not in sessions:
                sessions[r.connection] = Session(args, db)
            sql = r.sql.replace("$DATA_DIR", DATA_DIR)
            state, out = sessions[r.connection].run(sql)
            where = f"{path}:{r.line}"
            if r.expect_error:
                if state is None:
                    print(f"{where}: expected an error, PostgreSQL succeeded\n    {sql}")
                    failures += 1
                elif r.sqlstate and state != r.sqlstate:
                    print(f"{where}: expected SQLSTATE {r.sqlstate}, PostgreSQL gave {state}\n    {sql}")
                    failures += 1
                continue
            if state is not None:
                print(f"{where}: PostgreSQL failed ({state}): {out}\n    {sql}")
                failures += 1
                continue
            if r.kind == "query":
                failures += compare(where, sql, r, out)
    finally:
        for s in sessions.values():
            s.close()
    return failures


def compare(where, sql, r, out):
    """1 (and a report) when a query's rows differ from the record's."""
    got = [normalize(x) for x in rows_of(out)]
    want = [normalize(x) for x in r.results]
    if r.sort == "rowsort":
        got, want = sorted(got), sorted(want)
    elif r.sort == "valuesort":
        got = sorted(v for row in got for v in row.split(" "))
        want = sorted(v for row in want for v in row.split(" "))
    if got != want:
        print(f"{where}: result differs\n    {sql}\n    expected: {want}\n    postgres: {got}")
        return 1
    return 0


def normalize(line):
    return " ".join(line.split())


def rows_of(stdout):
    out = []
    for line in stdout.split("\n"):
        if line == "":
            continue
        # CHAR(n) prints blank-padded: an all-blank value is an empty string.
        fields = ["(empty)" if f.strip() == "" else f for f in line.split("\x1f")]
        out.append(" ".join(fields))
    return out


def check_file(args, path):
    db = "slt_" + re.sub(r"[^a-z0-9]", "_", os.path.basename(path).lower())
    psql(args, "postgres", f"DROP DATABASE IF EXISTS {db}")
    code, _, err = psql(args, "postgres", f"CREATE DATABASE {db}")
    if code:
        sys.exit(err)
    failures = 0
    if args.sessions:
        try:
            return check_in_sessions(args, path, db)
        finally:
            psql(args, "postgres", f"DROP DATABASE IF EXISTS {db}")
    try:
        for r in parse(path):
            if not applies(r):
                continue
            sql = r.sql.replace("$DATA_DIR", DATA_DIR)
            code, out, err = psql(args, db, sql)
            where = f"{path}:{r.line}"
            if r.expect_error:
                if code == 0:
                    print(f"{where}: expected an error, PostgreSQL succeeded\n    {sql}")
                    failures += 1
                continue
            if code:
                print(f"{where}: PostgreSQL failed: {err}\n    {sql}")
                failures += 1
                continue
            if r.kind != "query":
                continue
            failures += compare(where, sql, r, out)
    finally:
        psql(args, "postgres", f"DROP DATABASE IF EXISTS {db}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--host", default=os.environ.get("PGHOST", "localhost"))
    parser.add_argument("--port", default=os.environ.get("PGPORT", "5432"))
    parser.add_argument("--user", default=os.environ.get("PGUSER", "postgres"))
    parser.add_argument("--sessions", action="store_true",
                        help="run each file's records in order, one psql session per connection")
    args = parser.parse_args()
    total = 0
    for path in args.files:
        n = check_file(args, path)
        print(f"{path}: {'ok' if n == 0 else f'{n} difference(s)'}")
        total += n
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
