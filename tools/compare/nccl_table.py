"""Parser for the nccl-tests table printed by the tutti perf tests and the comparison drivers.

parse(text) -> Table with .rows (dicts), .footer, and .problems (format violations: anything
that differs from the nccl-tests columns and footer). Standard library only.
"""
import re

COLUMNS = ["size", "count", "type", "redop", "root",
           "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"]
UNITS = ["(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)", "(us)", "(GB/s)", "(GB/s)"]
# nccl-tests' names, and int16, uint16, band, bor, bxor (tutti additions, as in Gloo).
TYPES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "half",
         "float", "double", "bfloat16"}
OPS = {"sum", "prod", "max", "min", "avg", "band", "bor", "bxor", "none"}
_NUM = re.compile(r"^-?[0-9.]+(e[+-]?[0-9]+)?$")


class Table:
    def __init__(self):
        self.rows = []
        self.footer = {}
        self.problems = []
        self.header_seen = False
        self.sweep_algos = []  # -A all tables: algorithm column names

    def ok(self):
        return not self.problems


def _num(tok):
    return None if tok == "N/A" else float(tok)


def parse(text, extra_columns=0):
    """extra_columns: number of trailing tutti columns to accept (--limit, --show_algo)."""
    t = Table()
    lines = text.splitlines()
    for ln in lines:
        if ln.startswith("#") and "size" in ln and "count" in ln and "type" in ln:
            toks = ln[1:].split()
            if toks[:5] != COLUMNS[:5]:
                t.problems.append("bad column header: %r" % ln)
            elif "auto" in toks and "auto-algo" in toks:
                t.sweep_algos = toks[5:toks.index("auto")]
            elif toks[5:13] not in (COLUMNS[5:], ["cputime"] + COLUMNS[6:9] + ["cputime"] +
                                    COLUMNS[10:]):
                t.problems.append("bad column header: %r" % ln)
            t.header_seen = True
        elif ln.startswith("#") and "(B)" in ln and "(elements)" in ln and not t.sweep_algos:
            toks = ln[1:].split()
            if toks[:len(UNITS)] != UNITS:
                t.problems.append("bad units header: %r" % ln)
        elif ln.startswith("# Out of bounds values"):
            m = re.match(r"^# Out of bounds values : (\d+) (OK|FAILED)$", ln)
            if not m:
                t.problems.append("bad footer line: %r" % ln)
            else:
                t.footer["errors"] = int(m.group(1))
                t.footer["status"] = m.group(2)
        elif ln.startswith("# Avg bus bandwidth"):
            m = re.match(r"^# Avg bus bandwidth    : (\S+) ?(OK|FAILED)?\s*$", ln)
            if not m:
                t.problems.append("bad footer line: %r" % ln)
            else:
                t.footer["avg_busbw"] = float(m.group(1))
        elif ln.strip() and not ln.startswith("#"):
            toks = ln.split()
            if not t.header_seen or "errors" in t.footer:
                continue  # launcher noise before or after the table
            if t.sweep_algos:
                _parse_sweep_row(t, ln, toks)
                continue
            n = len(toks)
            if n < 13 or n > 13 + extra_columns:
                t.problems.append("row has %d fields, expected 13: %r" % (n, ln))
                continue
            try:
                row = {"size": int(toks[0]), "count": int(toks[1]), "type": toks[2],
                       "redop": toks[3], "root": int(toks[4]),
                       "oop": {"time": _num(toks[5]), "algbw": _num(toks[6]),
                               "busbw": _num(toks[7]), "wrong": _num(toks[8])},
                       "ip": {"time": _num(toks[9]), "algbw": _num(toks[10]),
                              "busbw": _num(toks[11]), "wrong": _num(toks[12])},
                       "extra": toks[13:]}
            except ValueError:
                t.problems.append("non-numeric field: %r" % ln)
                continue
            if row["type"] not in TYPES:
                t.problems.append("unknown type %r" % row["type"])
            if row["redop"] not in OPS:
                t.problems.append("unknown redop %r" % row["redop"])
            t.rows.append(row)
    if not t.header_seen:
        t.problems.append("no column header line")
    for key in ("errors", "avg_busbw"):
        if key not in t.footer:
            t.problems.append("footer line missing: %s" % key)
    return t


def _parse_sweep_row(t, ln, toks):
    n = 5 + len(t.sweep_algos) + 3
    if len(toks) != n:
        t.problems.append("sweep row has %d fields, expected %d: %r" % (len(toks), n, ln))
        return
    algos = {}
    for name, tok in zip(t.sweep_algos, toks[5:5 + len(t.sweep_algos)]):
        algos[name] = None if tok == "n/a" else float(tok.rstrip("*"))
    t.rows.append({"size": int(toks[0]), "count": int(toks[1]), "type": toks[2],
                   "redop": toks[3], "root": int(toks[4]), "algos": algos,
                   "auto": float(toks[-3]), "auto_algo": toks[-2],
                   "wrong": _num(toks[-1])})


def wrong_total(t):
    total = 0
    for r in t.rows:
        if "algos" in r:
            total += r["wrong"] or 0
        else:
            total += (r["oop"]["wrong"] or 0) + (r["ip"]["wrong"] or 0)
    return total
