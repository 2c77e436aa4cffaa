"""PostgreSQL's COPY text format built from numpy columns, with no Python object per value.

Each column becomes a byte matrix, one line per row, its field left-aligned and padded with NULs.
The matrices are laid side by side with tab and newline columns, and dropping every NUL leaves the
COPY text. PostgreSQL's text cannot hold a NUL, so none is lost.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

_TAB, _NEWLINE, _MINUS, _POINT, _ZERO = (ord(c) for c in "\t\n-.0")
_NULL = np.frombuffer(b"\\N", np.uint8)
_MAX_SCALE = 6  # floats with at most this many decimals are written as exact fixed-point decimals
_MAX_EXACT = 10 ** 15  # fewer than 16 significant digits: one decimal per double, as repr() finds it


def copy_text(values: Sequence[np.ndarray]) -> bytes | None:
    """The rows of ``values`` (see ``Engine.bulk_insert_columns``) as COPY text, or None when a column
    needs something this path does not do (escaped characters, another dtype): write rows then."""
    found = [_field(column) for column in values]
    fields = [field for field in found if field is not None]
    if len(fields) < len(found):
        return None
    rows = len(values[0]) if values else 0
    tab, newline = np.full((rows, 1), _TAB, np.uint8), np.full((rows, 1), _NEWLINE, np.uint8)
    matrix = np.hstack([part for field in fields for part in (field, tab)][:-1] + [newline])
    return matrix[matrix != 0].tobytes()


def _field(column: np.ndarray) -> np.ndarray | None:
    data = np.ma.getdata(column)
    if len(data) > 1 and data.strides[0] == 0:  # a constant broadcast to the chunk: format it once
        one = _field(data[:1])
        return None if one is None else _with_nulls(np.broadcast_to(one, (len(data), one.shape[1])), column)
    formatter = _FORMATTERS.get(data.dtype.kind)
    matrix = formatter(data) if formatter else None
    return None if matrix is None else _with_nulls(matrix, column)


def _with_nulls(matrix: np.ndarray, column: np.ndarray) -> np.ndarray:
    mask = np.ma.getmaskarray(column)
    if not mask.any():
        return matrix
    nulls = np.zeros((len(matrix), max(matrix.shape[1], len(_NULL))), np.uint8)
    nulls[:, :matrix.shape[1]] = matrix
    nulls[mask] = 0
    nulls[mask, :len(_NULL)] = _NULL
    return nulls


def _text(data: np.ndarray) -> np.ndarray | None:
    matrix = np.ascontiguousarray(data).view(np.uint8).reshape(len(data), data.dtype.itemsize)
    # A backslash, tab, newline or carriage return would need COPY's escapes: rare, left to the rows path.
    if ((matrix == ord("\\")) | ((matrix >= _TAB) & (matrix <= ord("\r")))).any():
        return None
    return matrix


def _integers(data: np.ndarray) -> np.ndarray | None:
    if data.dtype.kind == "u" and data.size and data.max() > np.iinfo(np.int64).max:
        return None
    signed = data.astype(np.int64)
    return _signed(np.signbit(signed), _digits(np.abs(signed)))


def _floats(data: np.ndarray) -> np.ndarray | None:
    """Exact fixed-point decimals, the same numbers Python's repr() gives; else repr() itself, by numpy."""
    scale = _scale(data)
    if scale is None:
        return _text(data.astype("S32"))
    units = np.abs(np.rint(data * 10.0 ** scale)).astype(np.int64)
    whole, fraction = np.divmod(units, 10 ** scale)
    parts = [_digits(whole)]
    if scale:
        parts += [np.full((len(data), 1), _POINT, np.uint8), _digits(fraction, width=scale)]
    return _signed(np.signbit(data), np.hstack(parts))


def _scale(data: np.ndarray) -> int | None:
    """The fewest decimals that write every value exactly, if that is at most ``_MAX_SCALE``."""
    if not data.size or not np.isfinite(data).all():
        return None if data.size else 0
    largest = float(np.abs(data).max())
    for scale in range(_MAX_SCALE + 1):
        if largest * 10 ** scale >= _MAX_EXACT:
            return None
        if np.array_equal(np.rint(data * 10.0 ** scale) / 10.0 ** scale, data):
            return scale
    return None


def _digits(values: np.ndarray, width: int | None = None) -> np.ndarray:
    """Decimal digits of non-negative integers, right-aligned; leading zeros are NUL unless ``width``
    is given (a fraction's digits keep theirs)."""
    fixed = width is not None
    size = width if width is not None else len(str(int(values.max()))) if values.size else 1
    digits = np.empty((size, len(values)), np.uint8)  # a digit position per row: contiguous writes
    rest: Any = values.astype(np.uint32 if size <= 9 else np.uint64)  # narrower division is several times faster
    ten = rest.dtype.type(10)
    for position in range(size - 1, -1, -1):  # a scalar divisor: numpy divides by multiplying
        quotient = rest // ten
        np.add(rest - quotient * ten, _ZERO, out=digits[position], casting="unsafe")
        if not fixed and position < size - 1:
            digits[position] *= rest > 0  # a leading zero: NUL
        rest = quotient
    return digits.T


def _signed(negative: np.ndarray, digits: np.ndarray) -> np.ndarray:
    if not negative.any():
        return digits
    return np.hstack([np.where(negative, _MINUS, 0).astype(np.uint8)[:, None], digits])


_FORMATTERS = {"S": _text, "i": _integers, "u": _integers, "f": _floats}
