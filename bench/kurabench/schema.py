"""The TPC-H schema and the index set, read from the files kura itself uses, so every
system gets the same tables and the same indexes."""

import re
from dataclasses import dataclass

from . import paths

# Loading order: small tables first, so a failure shows up early.
TABLES = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"]


@dataclass(frozen=True)
class Index:
    name: str
    table: str
    columns: tuple
    # Columns stored in every entry beside the key (`INCLUDE`): a covering index.
    include: tuple = ()

    def sql(self):
        text = f"CREATE INDEX {self.name} ON {self.table} ({', '.join(self.columns)})"
        if self.include:
            text += f" INCLUDE ({', '.join(self.include)})"
        return text


def strip_comments(text):
    return "\n".join(line.split("--", 1)[0] for line in text.splitlines())


def read_schema(path=paths.SCHEMA_FILE):
    """{table: [(column, type), ...]} in .tbl column order, from kura's schema.sql."""
    with open(path, encoding="utf-8") as f:
        text = strip_comments(f.read())
    tables = {}
    for match in re.finditer(r"CREATE\s+TABLE\s+(\w+)\s*\((.*?)\)\s*;", text, re.I | re.S):
        name, body = match.group(1).lower(), match.group(2)
        columns = []
        # Split on commas outside parentheses (DECIMAL(15,2) holds one).
        depth, field = 0, ""
        for ch in body + ",":
            if ch == "," and depth == 0:
                if field.strip():
                    words = field.split()
                    col_type = " ".join(w for w in words[1:] if w.upper() not in ("NOT", "NULL"))
                    columns.append((words[0].lower(), col_type.upper()))
                field = ""
                continue
            depth += ch == "("
            depth -= ch == ")"
            field += ch
        tables[name] = columns
    missing = [t for t in TABLES if t not in tables]
    if missing:
        raise ValueError(f"{path} lacks the tables {', '.join(missing)}")
    return tables


def create_table_sql(table, columns):
    return f"CREATE TABLE {table} ({', '.join(f'{c} {t}' for c, t in columns)})"


def read_indexes(path=paths.INDEX_FILE):
    """An index set: the `CREATE INDEX name ON table (col, ...) [INCLUDE (col, ...)]`
    statements of a file (indexes.sql, or kura's covering.sql)."""
    with open(path, encoding="utf-8") as f:
        text = strip_comments(f.read())
    indexes = []
    for stmt in text.split(";"):
        if not stmt.strip():
            continue
        match = re.fullmatch(
            r"\s*CREATE\s+INDEX\s+(\w+)\s+ON\s+(\w+)\s*\(([^)]*)\)(?:\s*INCLUDE\s*\(([^)]*)\))?\s*", stmt, re.I
        )
        if not match:
            raise ValueError(f"{path}: not a plain CREATE INDEX statement: {stmt.strip()}")
        columns = tuple(c.strip().lower() for c in match.group(3).split(","))
        include = tuple(c.strip().lower() for c in match.group(4).split(",")) if match.group(4) else ()
        indexes.append(Index(match.group(1).lower(), match.group(2).lower(), columns, include))
    return indexes
