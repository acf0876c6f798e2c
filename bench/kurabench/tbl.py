"""Reading dbgen `.tbl` files: `|`-separated fields with a trailing `|` on every line."""

import os


def path(tbl_dir, table):
    return os.path.join(tbl_dir, f"{table}.tbl")


def line_count(file_path):
    count = 0
    with open(file_path, "rb") as f:
        while chunk := f.read(1 << 20):
            count += chunk.count(b"\n")
    return count


def chunks_without_trailing_bar(file_path, chunk_bytes=4 << 20):
    """The file's bytes in chunks of whole lines, each line's trailing '|' removed
    (what COPY ... DELIMITER '|' expects)."""
    with open(file_path, "rb") as f:
        while True:
            lines = f.readlines(chunk_bytes)
            if not lines:
                return
            yield b"".join(lines).replace(b"|\n", b"\n")


def rows(file_path):
    """Rows as lists of strings, trailing field dropped."""
    with open(file_path, encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split("|")
            if fields and fields[-1] == "":
                fields.pop()
            yield fields
