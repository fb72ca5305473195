# SPDX-License-Identifier: Apache-2.0
"""The checks every value passes before it reaches the library.

ctypes converts silently: -1 becomes 2**64 - 1 in a size_t, 64.9 becomes 64,
and a pointer is only an address, so the library reads as many elements as
the configuration says whatever the array holds. Every argument is checked
here first, by name, and refused with TypeError (the wrong kind of value) or
ValueError (the right kind, out of range) before anything is called:

    check_int(value, name, low, high)   an integer in [low, high]
    check_uint32 / check_int32 / check_int64 / check_uint64 / check_size
    check_real(value, name)             a real number, as a Python float
    check_enum(value, enum_type, names, name)
                                        a member, one of the names, or an int
    check_float64_array(values, name, length)
                                        a fresh C-contiguous float64 copy of
                                        exactly length numbers
    check_host_array(array, name, dtype, min_size, writable)
                                        a NumPy array the library reads or
                                        writes through its address
    check_device_view(array, name, dtype, min_size)
                                        a pyopencl.array.Array whose own
                                        extent holds what the library touches
"""
import numbers
from typing import Any, Mapping, Sequence, Type, Union

import numpy as np
import numpy.typing as npt

INT32 = (-2 ** 31, 2 ** 31 - 1)
UINT32 = (0, 2 ** 32 - 1)
INT64 = (-2 ** 63, 2 ** 63 - 1)
UINT64 = (0, 2 ** 64 - 1)


def is_integer(value: object) -> bool:
    """A Python or NumPy integer; bool (a flag, not a count) is not one."""
    return isinstance(value, (numbers.Integral, np.integer)) and \
        not isinstance(value, (bool, np.bool_))


def check_int(value: Any, name: str, low: int, high: int) -> int:
    """value as a Python int, refused unless an integer in [low, high]."""
    if not is_integer(value):
        raise TypeError("clpe: %s must be an integer, got %r (%s)"
                        % (name, value, type(value).__name__))
    number = int(value)
    if not low <= number <= high:
        raise ValueError("clpe: %s = %d is out of range [%d, %d]" % (name, number, low, high))
    return number


def check_int32(value: Any, name: str) -> int:
    return check_int(value, name, *INT32)


def check_uint32(value: Any, name: str) -> int:
    return check_int(value, name, *UINT32)


def check_int64(value: Any, name: str) -> int:
    return check_int(value, name, *INT64)


def check_uint64(value: Any, name: str) -> int:
    return check_int(value, name, *UINT64)


def check_size(value: Any, name: str) -> int:
    """A count or size_t: an integer in [0, 2**64 - 1]."""
    return check_int(value, name, *UINT64)


def check_real(value: Any, name: str) -> float:
    """value as a Python float, refused unless a real number (an int, a
    float or a NumPy scalar of either; not a string, not a bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.number)) \
            or isinstance(value, (complex, np.complexfloating)):
        raise TypeError("clpe: %s must be a real number, got %r (%s)"
                        % (name, value, type(value).__name__))
    return float(value)


def check_enum(value: Any, enum_type: Type[Any], names: Mapping[str, Any], name: str) -> int:
    """The int of an enum value given as a member of enum_type, one of
    names (a dict from lower-case names to members; case is ignored) or a
    plain int (passed on, so the library refuses an unknown one with its
    own status)."""
    if isinstance(value, enum_type):
        return int(value)
    if isinstance(value, str):
        key = value.lower()
        if key in names:
            return int(names[key])
        raise ValueError("clpe: unknown %s %r (one of %s)"
                         % (name, value, ", ".join(sorted(names))))
    if is_integer(value):
        return check_int32(value, name)
    raise TypeError("clpe: %s must be one of %s, got %r (%s)"
                    % (name, ", ".join(sorted(names)), value, type(value).__name__))


def check_float64_array(values: Union[Sequence[float], "npt.NDArray[Any]"], name: str,
                        length: int) -> "npt.NDArray[np.float64]":
    """A fresh C-contiguous float64 array of exactly length real numbers
    from values (a sequence or an array of any real dtype), refused unless
    it holds exactly that many: the library reads length of them."""
    if isinstance(values, (str, bytes)) or np.isscalar(values):
        raise TypeError("clpe: %s must be a sequence of %d numbers, got %r"
                        % (name, length, values))
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as err:
        raise TypeError("clpe: %s must be a sequence of numbers (%s)" % (name, err)) from None
    if array.dtype.kind not in "iuf" or array.dtype == np.bool_:
        raise TypeError("clpe: %s must hold real numbers, got dtype %s" % (name, array.dtype))
    if array.ndim != 1 or array.shape[0] != length:
        raise ValueError("clpe: %s must hold exactly %d numbers (one per rotated pair), got "
                         "shape %s" % (name, length, array.shape))
    return np.array(array, dtype=np.float64, order="C", copy=True)


def check_host_array(array: Any, name: str, dtype: "npt.DTypeLike", min_size: int = 0,
                     writable: bool = False) -> "npt.NDArray[Any]":
    """A NumPy array of exactly dtype whose own elements (at least
    min_size of them) the library reads or, with writable, writes."""
    if not isinstance(array, np.ndarray):
        raise TypeError("clpe: %s must be a numpy.ndarray, got %s" % (name, type(array).__name__))
    if array.dtype != np.dtype(dtype):
        raise TypeError("clpe: %s must have dtype %s, got %s"
                        % (name, np.dtype(dtype).name, array.dtype))
    if writable and not array.flags.writeable:
        raise ValueError("clpe: %s is read-only" % name)
    if array.size < min_size:
        raise ValueError("clpe: %s must have at least %d elements, got %d"
                         % (name, min_size, array.size))
    return array


def check_device_view(array: Any, name: str, dtype: "npt.DTypeLike", min_size: int = 0) -> Any:
    """A C-contiguous pyopencl.array.Array of exactly dtype whose own
    extent (not the buffer under it) holds min_size elements: the library
    sees only the buffer and the view's offset, so a view too short for
    what it receives would let the library write past it."""
    if array.dtype != np.dtype(dtype):
        raise TypeError("clpe: %s must have dtype %s, got %s"
                        % (name, np.dtype(dtype).name, array.dtype))
    if not array.flags.c_contiguous:
        raise ValueError("clpe: %s must be C-contiguous" % name)
    if array.size < min_size:
        raise ValueError("clpe: %s must have at least %d elements, got %d"
                         % (name, min_size, array.size))
    return array
