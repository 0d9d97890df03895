#!/bin/bash
# collcheck env and the kernel log's PCIe AER lines (corrected, non-fatal,
# fatal; an old kernel's and a new one's wording) and NIC link flaps, port
# state changes, resets and transmit timeouts, counted per device.
. "$(dirname "$0")/lib.sh"
FIX=$TMP/fx
bash "$(dirname "$0")/fixtures/facts-tree.sh" "$FIX"

cat >"$TMP/kaer" <<'EOK'
4,1,1000,-;pcieport 0000:00:01.0: AER: Corrected error received: 0000:00:01.0
4,2,1001,-;pcieport 0000:00:01.0: AER: Correctable error message received from 0000:00:01.0
4,3,1002,-;pcieport 0000:00:01.0: AER: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)
EOK
COLL_KMSG_FILE=$TMP/kaer collcheck env >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "a few corrected AER errors are info"
check "... counted per device, both wordings" grep -q "INFO .*PCIe AER: 2 corrected errors from 0000:00:01.0 in the kernel log" "$TMP/o"
printf '3,4,1003,-;pcieport 0000:00:03.0: AER: Uncorrected (Non-Fatal) error received: 0000:3b:00.0\n' >>"$TMP/kaer"
COLL_KMSG_FILE=$TMP/kaer collcheck env >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "a non-fatal AER error"
check "... a warning naming the device that sent it" grep -q "WARN .*PCIe AER: 1 uncorrected (non-fatal) error from 0000:3b:00.0 in the kernel log: transactions were lost" "$TMP/o"
printf '2,5,1004,-;pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:01:00.0\n' >>"$TMP/kaer"
COLL_KMSG_FILE=$TMP/kaer COLL_FS_ROOT=$FIX collcheck env >"$TMP/o" 2>"$TMP/e"
check "a fatal AER error is an error, the GPU named" grep -q "ERROR .*PCIe AER: 1 fatal error from GPU 0 (0000:01:00.0) in the kernel log: the device was lost or reset; drain the node" "$TMP/o"

cat >"$TMP/knic" <<'EOK'
6,1,1000,-;mlx5_core 0000:3b:00.0 eth2: Link down
6,2,1001,-;mlx5_core 0000:3b:00.0 eth2: Link up
6,3,1002,-;mlx5_core 0000:3b:00.0 eth2: Link down
6,4,1003,-;mlx5_core 0000:3b:00.0 eth2: Link up
6,5,1004,-;ice 0000:17:00.0 ens1f0: NIC Link is Down
6,6,1005,-;ice 0000:17:00.0 ens1f0: NIC Link is Up, 100 Gbps Full Duplex
EOK
COLL_KMSG_FILE=$TMP/knic collcheck env >"$TMP/o" 2>"$TMP/e"
expect_code 0 $? "a link down twice is no flap"
check "... no finding" grep -q "^$(hostname) *OK\$" "$TMP/o"
printf '6,7,1005,-;mlx5_core 0000:3b:00.0 eth2: Link down\n' >>"$TMP/knic"
COLL_KMSG_FILE=$TMP/knic collcheck env >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "down 3 times: a flapping link"
check "... a warning naming the interface" grep -q "WARN .*NIC eth2: link went down 3 times in the kernel log: the link flaps; check the cable, transceiver and switch port" "$TMP/o"
check "the other NIC is not named" sh -c "! grep -q 'ens1f0' '$TMP/o'"
cat >"$TMP/kreset" <<'EOK'
[ 10.000000] NETDEV WATCHDOG: eth3 (mlx5_core): transmit queue 5 timed out 5080 ms
[ 11.000000] i40e 0000:18:00.0 eth4: TX timeout detected
[ 12.000000] ixgbe 0000:19:00.0 eth5: Reset adapter
[ 13.000000] mlx5_core 0000:3b:00.0: mlx5_ib: mlx5_0 port 1 port state changed
EOK
COLL_KMSG_FILE=$TMP/kreset collcheck env >"$TMP/o" 2>"$TMP/e"
expect_code 1 $? "transmit timeouts and a reset"
check "a watchdog timeout names the interface" grep -q "NIC eth3: transmit timeout 1 time in the kernel log: check the NIC's firmware" "$TMP/o"
check "a driver's TX timeout" grep -q "NIC eth4: transmit timeout 1 time" "$TMP/o"
check "an adapter reset" grep -q "NIC eth5: adapter reset 1 time" "$TMP/o"
COLL_KMSG_FILE=$TMP/kreset collcheck env -v >"$TMP/o" 2>"$TMP/e"
check "a port state change is counted" grep -q "^  kmsg.nic.mlx5_0:1.port_state  *1: " "$TMP/o"
finish
