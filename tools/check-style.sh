#!/bin/bash
# Fail when a C function body is longer than the limit (STYLE.md rule 11).
# A body starts with "{" alone in column 0 and ends with "}" in column 0.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${COLL_FUNC_MAX_LINES:-100}
awk -v limit="$limit" '
	FNR == 1 { inbody = 0 }
	/^{$/ { inbody = 1; start = FNR; next }
	/^}/ && inbody { n = FNR - start - 1; inbody = 0
		if (n > limit) { printf "%s:%d: function body is %d lines (limit %d): split it\n", FILENAME, start, n, limit; bad = 1 } }
	END { exit bad }
' $(git ls-files '*.c')
echo "function length: every body within $limit lines"
