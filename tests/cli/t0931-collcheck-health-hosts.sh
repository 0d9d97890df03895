#!/bin/bash
# collcheck env across hosts (two local ranks under collrun, each given its
# own fixture tree, so each is a host of its own): the kernel log's events
# and the counters are each host's, named on that host only and never
# compared across hosts; a baseline keeps each host's own counters.
. "$(dirname "$0")/lib.sh"
for i in 0 1; do bash "$(dirname "$0")/fixtures/facts-tree.sh" "$TMP/f$i"; done
echo hostb >"$TMP/f1/proc/sys/kernel/hostname"
mkdir -p "$TMP/f0/dev" "$TMP/f1/dev"
: >"$TMP/f0/dev/kmsg"
printf '3,1,1000,-;NVRM: Xid (PCI:0000:01:00): 79, pid=1, name=a, GPU has fallen off the bus.\n' >"$TMP/f1/dev/kmsg"
for i in 0 1; do
	mkdir -p "$TMP/f$i/sys/class/infiniband/mlx5_0/ports/1/counters"
	echo $((i * 5)) >"$TMP/f$i/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed"
done
cat >"$TMP/w.sh" <<EOW
#!/bin/sh
COLL_FS_ROOT=$TMP/f\$COLL_RANK exec "\$@"
EOW
chmod +x "$TMP/w.sh"
env2() { timeout 120 "$BIN/collrun" -n 2 "$TMP/w.sh" "$BIN/collcheck" env "$@"; }

env2 >"$TMP/o" 2>"$TMP/e"
check "two hosts" grep -q '^collcheck: 2 hosts, 2 ranks' "$TMP/o"
check "their logs and counters are not compared" grep -q ' 0 differ$' "$TMP/o"
check "the Xid is named on its host" grep -q '^hostb .*Xid 79 on GPU 0 (0000:01:00), 1 time' "$TMP/o"
check "... and not on the other" sh -c "! grep -q '^fixhost .*Xid' '$TMP/o'"
check "link_downed on its host only" sh -c "grep -q '^hostb .*RDMA mlx5_0 port 1: link_downed is 5' '$TMP/o' && ! grep -q '^fixhost .*link_downed' '$TMP/o'"

env2 --save-baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
check "the baseline keeps each host's counters" sh -c "grep -q '\"ctr.rdma.mlx5_0.1.link_downed@fixhost\": \"0\"' '$TMP/base.json' && grep -q '\"ctr.rdma.mlx5_0.1.link_downed@hostb\": \"5\"' '$TMP/base.json'"
env2 --baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
check "unchanged: no counter named" sh -c "! grep -q 'link_downed' '$TMP/o'"
echo 1 >"$TMP/f0/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed"
env2 --baseline "$TMP/base.json" >"$TMP/o" 2>"$TMP/e"
check "grown on one host: named there" grep -q '^fixhost .*RDMA mlx5_0 port 1: link_downed grew by 1 since the baseline' "$TMP/o"
check "... not on the other" sh -c "! grep -q '^hostb .*link_downed' '$TMP/o'"
finish
