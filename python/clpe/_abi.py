# SPDX-License-Identifier: Apache-2.0
"""The C declarations of clpe.h in ctypes, and their check against the
library's own table (clpe_abi_entries).

Every struct, enum and constant the binding uses is written here once. At
import, check_abi() compares each of them with what the loaded libclpe
reports (sizes, field offsets and sizes, constant values) and raises
ImportError on any difference, so a binding and a library that disagree
never exchange a byte.
"""
import ctypes
import enum
from typing import Any, Dict, Iterable, List, Mapping, Set, Tuple, Type

c_enum = ctypes.c_int  # a C enum of clpe.h: int-sized on every supported ABI
cl_handle = ctypes.c_void_p  # cl_mem, cl_context, cl_command_queue, cl_event, ...


class Freq(enum.IntEnum):
    """Frequency convention (clpe_freq)."""
    PAPER = 0
    TENSOR2TENSOR = 1


class Layout(enum.IntEnum):
    """Where sin and cos go within a row (clpe_layout)."""
    INTERLEAVED = 0
    SPLIT = 1
    SPLIT_COS_FIRST = 2


class Dtype(enum.IntEnum):
    """Element type of every buffer an encoder touches (clpe_dtype)."""
    F32 = 0
    F16 = 1
    BF16 = 2
    F64 = 3
    FP8_E4M3 = 4  # KV caches only
    FP8_E5M2 = 5  # KV caches only


class PositionSource(enum.IntEnum):
    """Which position each row gets (clpe_position_source)."""
    START = 0
    PER_SEQUENCE = 1
    IDS = 2
    STREAMS = 3              # rotary: [streams, batch, seq], one position per stream
    STREAMS_TOKEN_FIRST = 4  # rotary: [batch, seq, streams]


class Flag(enum.IntFlag):
    """clpe_config.flags (CLPE_FLAG_*)."""
    ODD_D_ZERO_COLUMN = 1
    PADDING_ROW = 2
    ODD_D_HALF_PAIR = 4


class RopePairing(enum.IntEnum):
    """Which elements a rotary pair takes (clpe_rope_pairing)."""
    HALF_SPLIT = 0
    INTERLEAVED = 1


class RopeScaling(enum.IntEnum):
    """Rotary frequency scaling (clpe_rope_scaling)."""
    DEFAULT = 0
    LINEAR = 1
    DYNAMIC = 2
    YARN = 3
    LLAMA3 = 4
    LONGROPE = 5
    FREQUENCIES = 6


ROPE_INVERSE = 1  # CLPE_ROPE_INVERSE: clpe_enqueue_rope rotates backwards


class MropeLadder(enum.IntEnum):
    """Where a multimodal rotary object's frequencies come from (clpe_mrope_ladder)."""
    ONE_LADDER = 0
    LADDER_PER_STREAM = 1


MROPE_MAX_STREAMS = 4  # CLPE_MROPE_MAX_STREAMS


class CAbiEntry(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_int64),
                ("offset", ctypes.c_uint64), ("size", ctypes.c_uint64),
                ("kind", ctypes.c_int32), ("reserved", ctypes.c_uint32)]


class CConfig(ctypes.Structure):
    _fields_ = [("d", ctypes.c_uint32), ("base", ctypes.c_double), ("freq", c_enum),
                ("layout", c_enum), ("dtype", c_enum), ("scale", ctypes.c_double),
                ("flags", ctypes.c_uint32), ("padding_position", ctypes.c_int64),
                ("reserved", ctypes.c_uint64 * 4)]


class CBuildLog(ctypes.Structure):
    _fields_ = [("buffer", ctypes.c_void_p), ("capacity", ctypes.c_size_t),
                ("length", ctypes.c_size_t)]


class CLaunchInfo(ctypes.Structure):
    _fields_ = [("pairs_per_item", ctypes.c_uint32), ("rows_per_item", ctypes.c_uint32),
                ("work_group_size", ctypes.c_size_t), ("max_launch_rows", ctypes.c_size_t),
                ("max_launch_batch", ctypes.c_size_t), ("tile_walk", ctypes.c_uint32),
                ("reserved32", ctypes.c_uint32), ("reserved", ctypes.c_uint64 * 3)]


class CDeviceTuning(ctypes.Structure):
    _fields_ = [("row", ctypes.c_char * 32), ("pairs_per_item", ctypes.c_uint32),
                ("pairs_per_item_rows16", ctypes.c_uint32),
                ("pairs_per_item_rope16", ctypes.c_uint32), ("rows_per_item", ctypes.c_uint32),
                ("work_group_size", ctypes.c_uint32), ("tile_walk", ctypes.c_uint32),
                ("tile_pairs", ctypes.c_uint32), ("ahead_steps", ctypes.c_uint32),
                ("ahead_steps16", ctypes.c_uint32), ("prefetch_for_write", ctypes.c_uint32),
                ("bf16_halves", ctypes.c_uint32), ("reserved32", ctypes.c_uint32),
                ("reserved", ctypes.c_uint64 * 3)]


class CTensor(ctypes.Structure):
    _fields_ = [("buffer", cl_handle), ("offset", ctypes.c_size_t),
                ("row_pitch", ctypes.c_size_t), ("batch_pitch", ctypes.c_size_t),
                ("reserved", ctypes.c_uint64 * 2)]


class CPositions(ctypes.Structure):
    _fields_ = [("source", c_enum), ("start", ctypes.c_int64), ("buffer", cl_handle),
                ("offset", ctypes.c_size_t), ("reserved", ctypes.c_uint64 * 2)]


class CTokenIds(ctypes.Structure):
    _fields_ = [("buffer", cl_handle), ("offset", ctypes.c_size_t),
                ("reserved", ctypes.c_uint64 * 2)]


class CRopeConfig(ctypes.Structure):
    _fields_ = [("head_dim", ctypes.c_uint32), ("rotary_dim", ctypes.c_uint32),
                ("base", ctypes.c_double), ("pairing", c_enum), ("dtype", c_enum),
                ("scaling", c_enum), ("factor", ctypes.c_double),
                ("original_max_position", ctypes.c_double),
                ("low_freq_factor", ctypes.c_double), ("high_freq_factor", ctypes.c_double),
                ("beta_fast", ctypes.c_double), ("beta_slow", ctypes.c_double),
                ("mscale", ctypes.c_double), ("mscale_all_dim", ctypes.c_double),
                ("no_truncate", ctypes.c_int32), ("attention_factor", ctypes.c_double),
                ("seq_len", ctypes.c_uint64), ("short_factor", ctypes.POINTER(ctypes.c_double)),
                ("long_factor", ctypes.POINTER(ctypes.c_double)),
                ("frequencies", ctypes.POINTER(ctypes.c_double)),
                ("reserved", ctypes.c_uint64 * 4)]


class CRopeTensor(ctypes.Structure):
    _fields_ = [("buffer", cl_handle), ("offset", ctypes.c_size_t), ("heads", ctypes.c_size_t),
                ("head_pitch", ctypes.c_size_t), ("row_pitch", ctypes.c_size_t),
                ("batch_pitch", ctypes.c_size_t), ("reserved", ctypes.c_uint64 * 2)]


class CHostRopeTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("heads", ctypes.c_size_t),
                ("head_pitch", ctypes.c_size_t), ("row_pitch", ctypes.c_size_t),
                ("batch_pitch", ctypes.c_size_t), ("reserved", ctypes.c_uint64 * 2)]


class CKvCache(ctypes.Structure):
    _fields_ = [("key", cl_handle), ("value", cl_handle), ("key_offset", ctypes.c_size_t),
                ("value_offset", ctypes.c_size_t), ("dtype", c_enum),
                ("num_blocks", ctypes.c_size_t), ("block_size", ctypes.c_size_t),
                ("heads", ctypes.c_size_t), ("head_pitch", ctypes.c_size_t),
                ("slot_pitch", ctypes.c_size_t), ("block_pitch", ctypes.c_size_t),
                ("key_scale", ctypes.c_float), ("value_scale", ctypes.c_float),
                ("reserved", ctypes.c_uint64 * 3)]


class CKvSlots(ctypes.Structure):
    _fields_ = [("buffer", cl_handle), ("offset", ctypes.c_size_t), ("report", cl_handle),
                ("reserved", ctypes.c_uint64 * 2)]


class CHostKvCache(ctypes.Structure):
    _fields_ = [("key", ctypes.c_void_p), ("value", ctypes.c_void_p), ("dtype", c_enum),
                ("num_blocks", ctypes.c_size_t), ("block_size", ctypes.c_size_t),
                ("heads", ctypes.c_size_t), ("head_pitch", ctypes.c_size_t),
                ("slot_pitch", ctypes.c_size_t), ("block_pitch", ctypes.c_size_t),
                ("key_scale", ctypes.c_float), ("value_scale", ctypes.c_float),
                ("reserved", ctypes.c_uint64 * 3)]
class CMropeConfig(ctypes.Structure):
    _fields_ = [("rope", CRopeConfig), ("streams", ctypes.c_uint32),
                ("section", ctypes.c_uint32 * MROPE_MAX_STREAMS), ("ladder", c_enum),
                ("reserved", ctypes.c_uint64 * 4)]


# The C name of every struct and scalar type the binding declares.
STRUCTS: Dict[str, Type[ctypes.Structure]] = {
    "clpe_abi_entry": CAbiEntry,
    "clpe_config": CConfig,
    "clpe_build_log": CBuildLog,
    "clpe_launch_info": CLaunchInfo,
    "clpe_device_tuning": CDeviceTuning,
    "clpe_tensor": CTensor,
    "clpe_positions": CPositions,
    "clpe_token_ids": CTokenIds,
    "clpe_rope_config": CRopeConfig,
    "clpe_rope_tensor": CRopeTensor,
    "clpe_host_rope_tensor": CHostRopeTensor,
    "clpe_kv_cache": CKvCache,
    "clpe_kv_slots": CKvSlots,
    "clpe_host_kv_cache": CHostKvCache,
    "clpe_mrope_config": CMropeConfig,
}
SCALARS: Dict[str, Type["ctypes._SimpleCData[Any]"]] = {
    "clpe_status": ctypes.c_int32,
    "clpe_abi_kind": c_enum,
    "clpe_freq": c_enum,
    "clpe_layout": c_enum,
    "clpe_dtype": c_enum,
    "clpe_position_source": c_enum,
    "clpe_rope_pairing": c_enum,
    "clpe_rope_scaling": c_enum,
    "clpe_mrope_ladder": c_enum,
}

ABI_TYPE, ABI_FIELD, ABI_CONSTANT = 0, 1, 2
# The library's table: (name, kind, value, offset, size) per entry.
AbiTable = List[Tuple[str, int, int, int, int]]


def _enum_constants(prefix: str, members: Iterable[enum.Enum]) -> Dict[str, int]:
    return {prefix + m.name: int(m.value) for m in members}


# The C name and value of every constant the binding relies on.
CONSTANTS: Dict[str, int] = {
    "CLPE_SUCCESS": 0,
    "CLPE_ABI_TYPE": ABI_TYPE,
    "CLPE_ABI_FIELD": ABI_FIELD,
    "CLPE_ABI_CONSTANT": ABI_CONSTANT,
    **_enum_constants("CLPE_FREQ_", Freq),
    **_enum_constants("CLPE_LAYOUT_", Layout),
    **_enum_constants("CLPE_DTYPE_", Dtype),
    **_enum_constants("CLPE_POSITIONS_", PositionSource),
    **_enum_constants("CLPE_FLAG_", Flag),
    **_enum_constants("CLPE_ROPE_", RopePairing),
    **_enum_constants("CLPE_ROPE_", RopeScaling),
    "CLPE_ROPE_INVERSE": ROPE_INVERSE,
    **_enum_constants("CLPE_MROPE_", MropeLadder),
    "CLPE_MROPE_MAX_STREAMS": MROPE_MAX_STREAMS,
}


def read_abi_table(lib: Any) -> AbiTable:
    """The library's table as a list of (name, kind, value, offset, size)."""
    count = ctypes.c_size_t()
    entries = lib.clpe_abi_entries(ctypes.byref(count))
    # The first entry describes clpe_abi_entry itself: check it before
    # stepping through the array with this binding's idea of its size.
    if count.value < 1 or entries[0].name != b"clpe_abi_entry" \
            or entries[0].size != ctypes.sizeof(CAbiEntry):
        raise ImportError("clpe: the library's ABI table is not laid out as this "
                          "binding expects (clpe_abi_entry)")
    return [(entries[i].name.decode(), entries[i].kind, entries[i].value,
             entries[i].offset, entries[i].size) for i in range(count.value)]


def abi_mismatches(table: AbiTable, structs: Mapping[str, Type[ctypes.Structure]] = STRUCTS,
                   scalars: Mapping[str, Type["ctypes._SimpleCData[Any]"]] = SCALARS,
                   constants: Mapping[str, int] = CONSTANTS) -> List[str]:
    """Every difference between the binding's declarations and the table, as
    lines of text; empty when they agree."""
    types = {name: size for name, kind, _, _, size in table if kind == ABI_TYPE}
    fields = {name: (offset, size) for name, kind, _, offset, size in table
              if kind == ABI_FIELD}
    values = {name: value for name, kind, value, _, _ in table if kind == ABI_CONSTANT}
    problems: List[str] = []

    def compare_type(name: str, size: int) -> None:
        if name not in types:
            problems.append("%s: not in the library" % name)
        elif types[name] != size:
            problems.append("%s: %d bytes in the binding, %d in the library"
                            % (name, size, types[name]))

    for name, ctype in scalars.items():
        compare_type(name, ctypes.sizeof(ctype))
    for name, struct in structs.items():
        compare_type(name, ctypes.sizeof(struct))
        declared: Set[str] = set()
        for field in struct._fields_:
            field_name = field[0]
            key = "%s.%s" % (name, field_name)
            declared.add(key)
            descriptor = getattr(struct, field_name)
            mine = (descriptor.offset, descriptor.size)
            if key not in fields:
                problems.append("%s: not in the library" % key)
            elif fields[key] != mine:
                problems.append("%s: %d bytes at offset %d in the binding, %d bytes at "
                                "offset %d in the library"
                                % (key, mine[1], mine[0], fields[key][1], fields[key][0]))
        for key in sorted(k for k in fields if k.startswith(name + ".")):
            if key not in declared:
                problems.append("%s: in the library, not in the binding" % key)
    for name, value in constants.items():
        if name not in values:
            problems.append("%s: not in the library" % name)
        elif values[name] != value:
            problems.append("%s = %d in the binding, %d in the library"
                            % (name, value, values[name]))
    return problems


def check_abi(lib: Any, path: str, structs: Mapping[str, Type[ctypes.Structure]] = STRUCTS,
              scalars: Mapping[str, Type["ctypes._SimpleCData[Any]"]] = SCALARS,
              constants: Mapping[str, int] = CONSTANTS) -> AbiTable:
    """Raise ImportError unless every declaration here matches the library."""
    table = read_abi_table(lib)
    problems = abi_mismatches(table, structs, scalars, constants)
    if problems:
        raise ImportError(
            "clpe: the Python binding does not match the library %s (%d difference%s: %s); "
            "install the package and the library from the same clpe version"
            % (path, len(problems), "" if len(problems) == 1 else "s", "; ".join(problems)))
    return table
