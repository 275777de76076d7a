# perfcached — bash completion for perfcli (installed as
# $(PREFIX)/share/bash-completion/completions/perfcli; or: source contrib/perfcli.bash).
# Copyright (c) 2026 the perfcached authors.
#
#   perfcli [--fifo PATH | --datagram PATH | --http URL [--token T]] [--reply-dir DIR] [-r] [-t S] mi CMD [ARG...]
#
# Options before `mi`; after it, the MI command names as the running daemon
# lists them (`perfcli ... mi which`, asked through the same door the command
# line names), or the static list below when the daemon cannot be reached;
# after the command, its parameter names (`which command=CMD`: name=).
# Needs nothing from the bash-completion package.

# The names `which` answered when this file was written (test_completion
# checks that the list and a running daemon's `which` agree).
_perfcli_static_commands="arg core:arg core:get_statistics core:help core:kill core:list_statistics
core:log_level core:mem_shm_dump core:perf_automove core:perf_maxmemory core:ps core:pwd
core:reset_all_statistics core:reset_statistics core:uptime core:version core:which db:perf_load
db:perf_save db:perf_sync db:wal_status event_subscribe
events_list evi:event_subscribe evi:events_list evi:subscribers_list get_statistics help kill
list_statistics log_level mem:shm_dump mem_shm_dump perf_automove perf_check perf_collections
perf_create perf_del perf_drop perf_dump perf_get perf_keys perf_load perf_maxmemory perf_probe perf_rename
perf_resize perf_save perf_scan perf_set perf_stats perf_stats_reset perf_sync perf_ttl perfcached:perf_check
perfcached:perf_collections perfcached:perf_create perfcached:perf_del perfcached:perf_drop
perfcached:perf_dump perfcached:perf_get perfcached:perf_keys perfcached:perf_probe
perfcached:perf_rename perfcached:perf_resize perfcached:perf_scan perfcached:perf_set
perfcached:perf_stats perfcached:perf_stats_reset perfcached:perf_ttl ps pwd reset_all_statistics
reset_statistics statistics:get statistics:list statistics:reset statistics:reset_all
subscribers_list uptime version wal_status which"

# The strings of perfcli's pretty JSON output, one per line (a `which`
# answer is an array of names; `which command=X` an array of recipes).
_perfcli_strings() {
  sed -n 's/^ *"\([^"]*\)",\{0,1\}$/\1/p'
}

# _perfcli_ask PERFCLI DOOR_ARGS... -- MI_ARGS...: one MI call with a 1 s
# timeout; prints nothing when the daemon does not answer.
_perfcli_ask() {
  local cli=$1
  shift
  local -a door=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    door+=("$1")
    shift
  done
  shift
  "$cli" "${door[@]}" -t 1 mi "$@" 2>/dev/null | _perfcli_strings
}

_perfcli() {
  local -a words
  local cur cword
  # The words up to the cursor, split on blanks only: MI names hold ':',
  # which bash's COMP_WORDS would cut in three ("core" ":" "wh").
  if [ -n "${COMP_LINE+x}" ] && [ -n "${COMP_POINT+x}" ]; then
    local line=${COMP_LINE:0:COMP_POINT}
    read -ra words <<<"$line"
    if [ -z "$line" ] || [[ $line == *[[:blank:]] ]]; then words+=(""); fi
  else
    words=("${COMP_WORDS[@]:0:COMP_CWORD+1}")
  fi
  cword=$((${#words[@]} - 1))
  cur=${words[cword]}
  local prev=${words[cword-1]:-}

  # Options before `mi`, kept to ask the daemon through the same door.
  local -a door=()
  local i=1 mi_at=0
  while [ $i -lt $cword ]; do
    case ${words[i]} in
      --fifo | --datagram | --http | --token | --reply-dir)
        door+=("${words[i]}" "${words[i+1]:-}")
        i=$((i + 2))
        continue
        ;;
      -t)
        i=$((i + 2))
        continue
        ;;
      mi)
        mi_at=$i
        break
        ;;
    esac
    i=$((i + 1))
  done

  local -a cands=()
  local names_arg=0  # `which CMD` and `help CMD` take a command name
  [ $mi_at -gt 0 ] && case ${words[mi_at+1]} in which | help | core:which | core:help) names_arg=1 ;; esac
  if [ $mi_at -eq 0 ]; then
    case $prev in
      --fifo | --datagram)
        COMPREPLY=($(compgen -f -- "$cur"))
        return 0
        ;;
      --reply-dir)
        COMPREPLY=($(compgen -d -- "$cur"))
        return 0
        ;;
      --http | --token | -t)
        COMPREPLY=()
        return 0
        ;;
    esac
    cands=($(compgen -W "--fifo --datagram --http --token --reply-dir -r -t -h --help mi" -- "$cur"))
  elif [ $cword -eq $((mi_at + 1)) ] || { [ $cword -eq $((mi_at + 2)) ] && [ $names_arg -eq 1 ]; }; then
    local names
    names=$(_perfcli_ask "${words[0]}" "${door[@]}" -- which)
    [ -n "$names" ] || names=$_perfcli_static_commands
    cands=($(compgen -W "$names" -- "$cur"))
  elif [[ $cur != *=* ]]; then
    # The parameter names of the command's recipes, as name=.
    local params
    params=$(_perfcli_ask "${words[0]}" "${door[@]}" -- which "command=${words[mi_at+1]}" | sort -u)
    [ -n "$params" ] && cands=($(compgen -W "$params" -S = -- "$cur"))
    [ ${#cands[@]} -gt 0 ] && compopt -o nospace 2>/dev/null
  fi
  # Bash inserts a completion in place of the part of the word after its
  # last word break: with ':' a break, hand it only that part.
  if [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]]; then
    local pre=${cur%:*}:
    for i in "${!cands[@]}"; do cands[i]=${cands[i]#"$pre"}; done
  fi
  COMPREPLY=("${cands[@]}")
  return 0
}

complete -F _perfcli perfcli
