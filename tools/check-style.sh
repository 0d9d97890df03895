#!/bin/bash
# Fail when a C function body is longer than the limit (STYLE.md rule 11).
# A body starts with "{" alone in column 0 and ends with "}" in column 0.
# The limit is what the code already meets (COLL_FUNC_MAX_LINES overrides it,
# 0 lists every body): lower it as the longest bodies are split, never raise
# it to let a new one in.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${COLL_FUNC_MAX_LINES:-80}
awk -v limit="$limit" '
	FNR == 1 { inbody = 0 }
	/^{$/ { inbody = 1; start = FNR; next }
	/^}/ && inbody { n = FNR - start - 1; inbody = 0
		if (n > max) { max = n; where = FILENAME ":" start }
		if (n > limit) { printf "%s:%d: function body is %d lines (limit %d): split it\n", FILENAME, start, n, limit; bad = 1 } }
	END { if (!bad) printf "function length: every body within %d lines (the longest, %d, at %s)\n", limit, max, where
		exit bad }
' $(git ls-files '*.c')
