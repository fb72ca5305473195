#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh - run a program under Oclgrind with its checkers on and judge the
# report:
#
#   run.sh clean PROGRAM [ARGS]          the program must pass and Oclgrind
#                                        must report nothing
#   run.sh flags PATTERN PROGRAM [ARGS]  Oclgrind must report PATTERN (an
#                                        extended regex): the checker is live
#
# Checkers: --check-api (every OpenCL call's arguments), --data-races, and
# the memory checks that are always on (every global, local and private
# access against its allocation). --uninitialized is left off: Oclgrind
# 21.10 flags vector shuffles whose mask holds the index 11 (a plugin bug),
# which clpe's interleave of eight (sin, cos) pairs has.
# A report is any line with "invalid", "race" or "error" (Oclgrind's words
# for memory, race and API findings), case-insensitive.
set -euo pipefail
mode=${1:?usage: run.sh clean|flags ...}
shift
pattern=
if [[ $mode == flags ]]; then
  pattern=${1:?run.sh flags needs a pattern}
  shift
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
oclgrind --check-api --data-races --max-errors 20 "$@" 2>"$log" || status=$?
case $mode in
clean)
  if grep -Eiq 'invalid|race|error' "$log" || ((status != 0)); then
    cat "$log" >&2
    echo "oclgrind: $* (exit $status): reports above" >&2
    exit 1
  fi
  echo "oclgrind: $*: no reports"
  ;;
flags)
  if ! grep -Eq "$pattern" "$log"; then
    cat "$log" >&2
    echo "oclgrind: '$pattern' was not reported for $*: the checker is not live" >&2
    exit 1
  fi
  echo "oclgrind: '$pattern' reported for $*, as it must be"
  ;;
*)
  echo "usage: run.sh clean PROGRAM [ARGS] | run.sh flags PATTERN PROGRAM [ARGS]" >&2
  exit 2
  ;;
esac
