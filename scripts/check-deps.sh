#!/usr/bin/env bash
# Fails when a source file includes upward in the dependency direction
#   mem <- cache <- (proc, net, mi, db) <- modules <- (daemon, cluster)
# or when mem/ or cache/ include socket, event-loop or config machinery.
set -euo pipefail
cd "$(dirname "$0")/.."

allowed() {  # dir -> space-separated list of dirs it may include from
  case "$1" in
    mem) echo "mem" ;;
    cache) echo "mem cache" ;;
    proc|net|mi|db) echo "mem cache $1" ;;
    modules) echo "mem cache proc net mi db modules" ;;
    daemon) echo "mem cache proc net mi db modules daemon" ;;
    cluster) echo "mem cache proc net mi db modules cluster" ;;
    *) echo "*" ;;
  esac
}

bad=0
for dir in mem cache proc net mi db modules daemon cluster; do
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
# cache/'s internals (cache/internal.h, namespace cache::detail) are for
# cache/ itself and the engine's own tests: a door or a process uses the
# public headers behind cache/table.h (cache/dict.h, the aggregate engine
# under hash_ops / set_ops, is internal too). Nor may a public cache/ header pull
# the internals in.
doors="modules proc net mi db cluster daemon"
for dir in $doors; do
  [ -d "$dir" ] || continue
  if grep -rnE --include='*.h' --include='*.cc' '#include "cache/(internal|dict)\.h"|cache::detail|namespace detail *= *cache' "$dir"; then
    echo "check-deps: $dir/ uses cache internals (cache/internal.h, cache::detail); use the public cache/ headers"
    bad=1
  fi
done
for pub in cache/table.h cache/catalog.h cache/ops.h cache/scan.h cache/maint.h cache/number.h \
           cache/string_ops.h cache/key_ops.h cache/hash_ops.h cache/set_ops.h cache/encoding.h; do
  [ -f "$pub" ] || continue
  if grep -n '#include "cache/internal\.h"' "$pub"; then
    echo "check-deps: public header $pub includes cache/internal.h"; bad=1
  fi
done
exit $bad
