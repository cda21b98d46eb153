"""Test data for the torch backend: values distinct per (rank, call, element), not periodic
(a 64-bit mix of the three), small integers so that sums, averages and products are exact in
every dtype at the rank counts tested; expected results computed here in float64/int64,
independently of any collective."""
import torch

_M = (1 << 64) - 1


def _mix(x):
    x = (x + 0x9E3779B97F4A7C15) & _M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M
    return x ^ (x >> 31)


def _signed(c):
    return c - (1 << 64) if c >= (1 << 63) else c


def _lsr(x, k):  # logical right shift of an int64 tensor
    return (x >> k) & ((1 << (64 - k)) - 1)


def _mix_tensor(x):  # _mix on every element (int64 arithmetic wraps like uint64)
    x = x + _signed(0x9E3779B97F4A7C15)
    x = (x ^ _lsr(x, 30)) * _signed(0xBF58476D1CE4E5B9)
    x = (x ^ _lsr(x, 27)) * _signed(0x94D049BB133111EB)
    return x ^ _lsr(x, 31)


def raw(rank, call, n, kind="sum"):
    """int64 tensor of n values for (rank, call). kind "sum": [-30, 30]; "prod": {-2,-1,1,2};
    "unsigned": [0, 60]; "bool": {0, 1}."""
    base = _signed(_mix((rank + 1) * 1_000_003 + call * 7_919))
    i = torch.arange(n, dtype=torch.int64)
    h = _lsr(_mix_tensor(i * _signed(0x632BE59BD9B4E019) ^ base), 1)  # non-negative
    if kind == "sum":
        return h % 61 - 30
    if kind == "prod":
        return torch.tensor([-2, -1, 1, 2], dtype=torch.int64)[h % 4]
    if kind == "unsigned":
        return h % 61
    return h % 2


def kind_for(dtype, op="sum"):
    if dtype == torch.bool:
        return "bool"
    if op == "prod":
        return "prod" if dtype not in (torch.uint8,) else "unsigned_prod"
    if dtype == torch.uint8:
        return "unsigned"
    return "sum"


def values(rank, call, n, dtype, op="sum"):
    kind = kind_for(dtype, op)
    if kind == "unsigned_prod":  # products of {1, 2} stay unsigned and small
        return (raw(rank, call, n, "bool") + 1).to(dtype)
    return raw(rank, call, n, kind).to(dtype)


def reduced(nranks, call, n, dtype, op):
    """Expected all-reduce of values(r, call, n, dtype, op) over r < nranks."""
    xs = [values(r, call, n, dtype, op).to(torch.float64) for r in range(nranks)]
    stack = torch.stack(xs)
    if op == "sum":
        out = stack.sum(0)
    elif op == "prod":
        out = stack.prod(0)
    elif op == "min":
        out = stack.min(0).values
    elif op == "max":
        out = stack.max(0).values
    elif op == "avg":
        out = stack.sum(0) / nranks
    else:
        raise ValueError(op)
    return out != 0 if dtype == torch.bool else out


def exact_equal(got, expected_f64):
    """Bitwise comparison after converting the float64 expectation to got's dtype."""
    want = expected_f64.to(got.dtype) if got.dtype != torch.bool else expected_f64.bool()
    return torch.equal(got.reshape(-1), want.reshape(-1))


_WIDTH = {torch.int16: 16, torch.uint16: 16, torch.int32: 32, torch.uint32: 32,
          torch.int64: 63, torch.uint64: 63, torch.int8: 8, torch.uint8: 8, torch.bool: 1}


def bit_values(rank, call, n, dtype):
    """int64 values for bitwise reductions: every bit of dtype's width in play (63 bits for the
    64-bit types), distinct per (rank, call, element); signed types get negative values."""
    width = _WIDTH[dtype]
    h = _lsr(_mix_tensor(torch.arange(n, dtype=torch.int64) * 0x5851F42D4C957F2D ^
                         _signed(_mix((rank + 7) * 2_654_435_761 + call * 40_503))), 1)
    v = h & ((1 << width) - 1) if width < 63 else h
    if dtype in (torch.int8, torch.int16, torch.int32):  # the top bit as the sign
        v = v - ((v >> (width - 1)) & 1) * (1 << width)
    return v


def bits_reduced(nranks, call, n, dtype, op):
    """Expected band/bor/bxor/sum/max of bit_values over the ranks, as int64."""
    out = bit_values(0, call, n, dtype)
    for r in range(1, nranks):
        x = bit_values(r, call, n, dtype)
        out = {"band": out & x, "bor": out | x, "bxor": out ^ x,
               "max": torch.maximum(out, x)}[op]
    return out
