#!/bin/bash
# The map against the build: docs/ARCHITECTURE.md's module table (the rows
# under its "| module | links | job |" header) must name every module
# core/CMakeLists.txt builds, no other, and the links each declares (the
# build's modules.txt, written by coll_module_map). One line per difference,
# naming the module; exit 1 if any.
#
# usage: modmap.sh ARCHITECTURE.md modules.txt
set -euo pipefail
doc=$1 built=$2
[ -r "$built" ] || { echo "modmap: no $built: configure with CMake 3.19 or later"; exit 77; }

# "name: a b c" per module, links sorted, from the doc's table: the module
# cell may say `core/util` or util; the links cell lists names separated by
# commas or spaces, "-" for none.
doc_map() {
	awk -F'|' '
		/^\| *module *\| *links *\| *job *\| *$/ { intable = 1; next }
		intable && /^\| *-/ { next }
		intable && !/^\|/ { exit }
		intable {
			m = $2; l = $3
			gsub(/[` ]/, "", m); sub(/^core\//, "", m)
			gsub(/[`,]/, " ", l)
			k = split(l, t, " "); n = 0; s = ""
			for (i = 1; i <= k; i++) if (t[i] != "-") a[++n] = t[i]
			# insertion sort: awk has no portable sort
			for (i = 2; i <= n; i++) { v = a[i]; for (j = i - 1; j >= 1 && a[j] > v; j--) a[j + 1] = a[j]; a[j + 1] = v }
			for (i = 1; i <= n; i++) s = s " " a[i]
			print m ":" s
		}' "$1"
}

declare -A want=() have=()
rows=0 order=() dorder=()
while IFS=: read -r m l; do
	[ -n "$m" ] || continue
	[ -z "${want[$m]+x}" ] || { echo "module $m: listed twice in $doc"; exit 1; }
	read -ra w <<<"$l"
	want[$m]=${w[*]-}
	dorder+=("$m")
	rows=$((rows + 1))
done < <(doc_map "$doc")
[ $rows -gt 0 ] || { echo "no '| module | links | job |' table in $doc"; exit 1; }
while IFS=: read -r m l; do
	[ -n "$m" ] || continue
	read -ra w <<<"$l"
	have[$m]=${w[*]-}
	order+=("$m")
done <"$built"

bad=0
for m in "${order[@]}"; do
	if [ -z "${want[$m]+x}" ]; then
		echo "module $m: built (core/CMakeLists.txt) but not in $doc's module table: add its row"
		bad=1
	elif [ "${want[$m]}" != "${have[$m]}" ]; then
		echo "module $m: links '${have[$m]}' in the build, '${want[$m]}' in $doc: make them agree"
		bad=1
	fi
done
for m in "${dorder[@]}"; do
	[ -n "${have[$m]+x}" ] && continue
	echo "module $m: in $doc's module table but not built: remove its row or build it"
	bad=1
done
[ $bad = 0 ] && echo "module map: ${#order[@]} modules, the doc and the build agree"
exit $bad
