#!/bin/bash
# COLL_DEBUG logs to stderr with host, pid and rank in every line; off by default.
. "$(dirname "$0")/lib.sh"

COLL_DEBUG=INFO collrun -n 2 --no-label collcheck allreduce -b 8 -e 8 -n 1 -w 0 >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "a job with COLL_DEBUG=INFO"
host=$(hostname)
check "rank 0 and 1 log with host:pid:rank" grep -q "^$host:[0-9]*:1 coll INFO rank 1 of 2 joined" "$TMP/e"
check "rank 0 logs its join" grep -q "^$host:[0-9]*:0 coll INFO rank 0 of 2 joined" "$TMP/e"
check "no debug lines on stdout" test "$(grep -c 'coll INFO' "$TMP/o")" -eq 0
collrun -n 2 --no-label collcheck allreduce -b 8 -e 8 -n 1 -w 0 >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "a job without COLL_DEBUG"
check "silent without COLL_DEBUG" test ! -s "$TMP/e"
finish
