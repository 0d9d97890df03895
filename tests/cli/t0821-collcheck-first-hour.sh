#!/bin/bash
# A first hour with collcheck (issue 37, items 9, 11, 14, 15): no false OK,
# no false alarm, no option quietly changed, sizes as integers.
. "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 1

# Item 11: links with 1 rank measured nothing: said, exit 2.
collcheck links -N 1 >o 2>e
expect_code 2 $? "links -N 1"
check "says nothing was measured" grep -q 'nothing measured: links needs 2 ranks' e
# Plain collcheck on one host: 2 ranks, so the sweep measures something.
collcheck >o 2>e
expect_code 0 $? "plain collcheck"
check "it ran 2 ranks" grep -q '^collcheck: 1 host, 2 ranks' o
check "and says why" grep -q '2 ranks on this host (1 would measure nothing)' e
check "GPU/RDMA checks that found nothing are said in one line" grep -q '^not checked (none found; -v says why): .*rdma' o
# More ranks than CPUs: no pair is flagged; one line says why; exit 0.
n=$(( $(nproc) * 2 ))
collcheck links -N "$n" -s 64K --iters 2 >o 2>e
expect_code 0 $? "links -N $n on $(nproc) CPUs"
check "says it is oversubscribed" grep -q "links not judged: $n ranks on .* CPUs (oversubscribed)" o
check "flags no pair" test "$(grep -c 'pair ' o)" = 0

# Item 14: -i 0 and -f 1 refused, not changed; the step in bytes as an integer.
collcheck allreduce -i 0 >o 2>e
expect_code 2 $? "-i 0"
check "says why in one line" grep -q '^collcheck allreduce: -i 0 would never grow the size' e
collcheck allreduce -f 1 >o 2>e
expect_code 2 $? "-f 1"
collcheck allreduce -N 2 -b 1M -e 2M -i 1M -n 1 -w 0 >o 2>e
expect_code 0 $? "-i 1M"
check "step: 1048576(bytes) in the header" grep -q 'step: 1048576(bytes) ' o
# An empty baseline: no '(line -1)'.
: >empty.json
collcheck env --baseline empty.json >o 2>e
expect_code 2 $? "an empty baseline"
check "no line -1" test "$(grep -c 'line -1' e)" = 0

# Item 9: -np and --np are total ranks; -N per host; fanout is --fanout only.
collcheck allreduce -np 2 -b 8 -e 8 -n 1 -w 0 >o 2>e
expect_code 0 $? "-np 2"
check "-np 2 ran 2 ranks" grep -q '^# collcheck allreduce: 2 ranks' o
collcheck allreduce --np 3 -N 2 >o 2>e
expect_code 2 $? "--np 3 with -N 2 on one host"
collcheck env -f 4 >o 2>e
expect_code 2 $? "-f is not fanout"
collcheck env --fanout 4 >o 2>e
expect_code 0 $? "--fanout 4"
finish
