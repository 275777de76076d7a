#!/usr/bin/env bash
# Fails when a source file includes upward in the dependency direction
#   mem <- cache <- (proc, net, mi, db) <- modules <- cluster
# or when mem/ or cache/ include socket, event-loop or config machinery.
set -euo pipefail
cd "$(dirname "$0")/.."

allowed() {  # dir -> space-separated list of dirs it may include from
  case "$1" in
    mem) echo "mem" ;;
    cache) echo "mem cache" ;;
    proc|net|mi|db) echo "mem cache $1" ;;
    modules) echo "mem cache proc net mi db modules" ;;
    cluster) echo "mem cache proc net mi db modules cluster" ;;
    *) echo "*" ;;
  esac
}

bad=0
for dir in mem cache proc net mi db modules cluster; do
  [ -d "$dir" ] || continue
  ok=$(allowed "$dir")
  while IFS= read -r line; do
    file=${line%%:*}
    inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$line")
    top=${inc%%/*}
    [ "$top" = "$inc" ] && continue               # same-directory include
    case " $ok " in *" $top "*) ;; *)
      if [ -d "$top" ]; then echo "check-deps: $file includes $inc ($dir may use: $ok)"; bad=1; fi
    esac
  done < <(grep -rn --include='*.h' --include='*.cc' '^#include "' "$dir" || true)
done

# mem/ and cache/ know no socket, no event loop, no config file.
if grep -rnE '^#include <(sys/socket\.h|netinet/|arpa/|event2/|sys/un\.h)' mem cache 2>/dev/null; then
  echo "check-deps: mem/ or cache/ include networking headers"; bad=1
fi
exit $bad
