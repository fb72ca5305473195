#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check.sh LIBRARY - compare the ABI of a built libclpe (shared, with debug
# information: a RelWithDebInfo or Debug build) with the ABI of clpe 1.0.0
# stored in abi/clpe-1.0.0.abi, using abidiff (Debian: abigail-tools).
# Additions are allowed; any change that breaks a program built against
# 1.0.0 (a removed or changed function, a struct whose layout moved, a
# changed constant's type) fails. The soname differs on purpose (1.0.0
# shipped libclpe.so.1.0; since 1.2.0 it is libclpe.so.1, the major version,
# with a libclpe.so.1.0 link installed for programs linked against 1.0.0).
#
# To store the dump of a new release R (built from its tag, with -g):
#   abidw --headers-dir include --no-corpus-path --short-locs \
#         --no-comp-dir-path build/libclpe.so.R > abi/clpe-R.abi
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 path/to/libclpe.so" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
baseline="$root/abi/clpe-1.0.0.abi"
if ! command -v abidiff >/dev/null 2>&1; then
  echo "abi: abidiff not found (Debian: apt-get install abigail-tools)" >&2
  exit 1
fi
library=$(readlink -f "$1")
sections=$(readelf -S "$library")
if ! grep -q '\.debug_info' <<<"$sections"; then
  echo "abi: $library has no debug information; build with RelWithDebInfo" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The soname changed on purpose, and 1.0.0's programs still load 1.x through
# the libclpe.so.1.0 link installed beside it: compare everything else.
soname=$(readelf -d "$library" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
sed "1s/soname='[^']*'/soname='$soname'/" "$baseline" >"$work/baseline.abi"
status=0
abidiff --headers-dir2 "$root/include" --no-show-locs "$work/baseline.abi" "$library" \
  >"$work/report" 2>&1 || status=$?
report=$(cat "$work/report")
# abidiff's status is a bit field: 1 error, 2 usage error, 4 a change,
# 8 an incompatible change.
if ((status & 3)); then
  echo "$report" >&2
  echo "abi: abidiff failed (status $status)" >&2
  exit 1
fi
# abidiff calls only some breaks incompatible (status 8): a struct that grows
# or a member that moves is "a change" (4). So any removed or changed
# function or variable fails too; only added ones pass.
summary_count() { # KIND WORD -> the number before WORD on KIND's summary line
  sed -n "s/^$1 changes summary: .*\b\([0-9][0-9]*\) $2.*/\1/p" <<<"$report" | head -n 1
}
broken=0
((status == 0)) || for kind in Functions Variables; do
  for word in Removed Changed; do
    n=$(summary_count "$kind" "$word")
    [ -n "$n" ] || { echo "$report" >&2; echo "abi: cannot read abidiff's $kind summary" >&2; exit 1; }
    ((n == 0)) || broken=1
  done
done
if ((status & 8)) || ((broken)); then
  echo "$report" >&2
  echo "abi: FAILED: $library breaks the ABI of clpe 1.0.0 (report above)" >&2
  exit 1
fi
echo "$report"
echo "abi: $library is compatible with clpe 1.0.0 (abidiff status $status: additions only)"
