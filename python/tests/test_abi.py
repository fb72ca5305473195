# SPDX-License-Identifier: Apache-2.0
"""The binding's structs and constants are checked against the library at
import, the check catches a wrong declaration, and the library's table
covers everything clpe.h declares."""
import ctypes
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import clpe
from clpe import _abi, _library
from conftest import HEADER

TABLE = _abi.read_abi_table(clpe._lib)


def test_binding_matches_library():
    assert _abi.abi_mismatches(TABLE) == []
    names = {name for name, *_ in TABLE}
    assert {"clpe_config", "clpe_config.reserved", "CLPE_ERROR_RESERVED_FIELD"} <= names


def test_table_values_are_those_of_the_header():
    # Independent of the binding: values read from the header's text.
    header = HEADER.read_text()
    values = {name: value for name, kind, value, _, _ in TABLE if kind == _abi.ABI_CONSTANT}
    for name, text in re.findall(r"^\s+(CLPE_[A-Z0-9_]+) = (-?\d+)", header, re.M):
        assert values[name] == int(text), name
    assert values["CLPE_MAX_D"] == 1 << 24
    assert values["CLPE_FLAG_PADDING_ROW"] == 2


def test_wrong_field_type_is_caught():
    class WrongConfig(ctypes.Structure):  # d declared 64-bit instead of uint32_t
        _fields_ = [(n, ctypes.c_uint64 if n == "d" else t) for n, t in _abi.CConfig._fields_]

    structs = dict(_abi.STRUCTS, clpe_config=WrongConfig)
    problems = _abi.abi_mismatches(TABLE, structs=structs)
    assert any(p.startswith("clpe_config.d: 8 bytes at offset 0 in the binding, 4 bytes")
               for p in problems), problems
    assert len(problems) == 1, problems  # padding after d hides it from the size


def test_missing_field_and_wrong_constant_are_caught():
    class ShortTensor(ctypes.Structure):  # forgets the reserved words
        _fields_ = _abi.CTensor._fields_[:-1]

    structs = dict(_abi.STRUCTS, clpe_tensor=ShortTensor)
    constants = dict(_abi.CONSTANTS, CLPE_DTYPE_F64=5)
    problems = _abi.abi_mismatches(TABLE, structs=structs, constants=constants)
    assert "clpe_tensor.reserved: in the library, not in the binding" in problems
    assert "CLPE_DTYPE_F64 = 5 in the binding, 3 in the library" in problems
    assert len(problems) == 3, problems  # and the struct size


def _import_patched_copy(tmp_path, old, new):
    """Import a copy of the package whose _abi.py has old replaced by new,
    against the same library; returns the finished process."""
    package = Path(clpe.__file__).parent
    copy = tmp_path / "clpe"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    source = (copy / "_abi.py").read_text()
    assert old in source
    (copy / "_abi.py").write_text(source.replace(old, new))
    env = dict(os.environ, CLPE_LIBRARY=clpe.library_path, PYTHONPATH=str(tmp_path))
    return subprocess.run([sys.executable, "-c", "import clpe"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)


def test_mismatched_struct_fails_at_import(tmp_path):
    done = _import_patched_copy(tmp_path, '("flags", ctypes.c_uint32)',
                                '("flags", ctypes.c_uint64)')
    assert done.returncode != 0
    assert "ImportError: clpe: the Python binding does not match the library" in done.stderr
    assert "clpe_config.flags: 8 bytes at offset 40 in the binding, 4 bytes at offset 40" \
        in done.stderr


def test_mismatched_constant_fails_at_import(tmp_path):
    done = _import_patched_copy(tmp_path, "    F64 = 3\n", "    F64 = 4\n")
    assert done.returncode != 0
    assert "CLPE_DTYPE_F64 = 4 in the binding, 3 in the library" in done.stderr


def test_unpatched_copy_imports(tmp_path):
    # The same route with no change succeeds: the failures above are the patch's.
    done = _import_patched_copy(tmp_path, "    F64 = 3\n", "    F64 = 3\n")
    assert done.returncode == 0, done.stderr


def _header_declarations():
    header = HEADER.read_text()
    header = re.sub(r"/\*.*?\*/", "", header, flags=re.S)
    constants = set(re.findall(r"^\s+(CLPE_[A-Z0-9_]+) = ", header, re.M))
    constants |= {name for name, value in re.findall(r"^#define (CLPE_[A-Z0-9_]+)\s+(\S.*)$",
                                                     header, re.M)
                  if re.match(r"[-(\d]", value) or name == "CLPE_VERSION_NUMBER"}
    types = set(re.findall(r"^typedef (?:enum|struct) (\w+) \{", header, re.M))
    types.add("clpe_status")
    fields = set()
    for struct, body in re.findall(r"^typedef struct (\w+) \{(.*?)\} \1;", header, re.M | re.S):
        for declaration in body.split(";")[:-1]:
            # "size_t heads, head_pitch;" declares two fields
            first, *more = declaration.split(",")
            for declarator in [first] + more:
                fields.add("%s.%s" % (struct, re.search(r"(\w+)\s*(\[[^]]*\])?\s*$",
                                                        declarator).group(1)))
    functions = set(re.findall(r"^CLPE_API [^;]*?\b(clpe_\w+)\(", header, re.M))
    return constants, types, fields, functions


def test_table_covers_the_header():
    constants, types, fields, functions = _header_declarations()
    in_table = {kind: {name for name, k, *_ in TABLE if k == kind}
                for kind in (_abi.ABI_TYPE, _abi.ABI_FIELD, _abi.ABI_CONSTANT)}
    assert constants == in_table[_abi.ABI_CONSTANT]
    assert types == in_table[_abi.ABI_TYPE]
    assert fields == in_table[_abi.ABI_FIELD]
    assert len(fields) >= 30 and "clpe_positions.source" in fields


def test_binding_declares_every_header_function_and_type():
    constants, types, fields, functions = _header_declarations()
    assert len(functions) >= 20
    assert functions == set(_library.PROTOTYPES) | set(_library.OPTIONAL_PROTOTYPES)
    assert not set(_library.PROTOTYPES) & set(_library.OPTIONAL_PROTOTYPES)
    structs = set(re.findall(r"^typedef struct (\w+) \{", HEADER.read_text(), re.M))
    assert structs == set(_abi.STRUCTS)
    assert types - structs == set(_abi.SCALARS)
