# bash completion for allocrr: commands, their options and the values some
# options take. Commands and options come from `allocrr --help` and
# `allocrr CMD --help` (read once per shell and kept), so they are the ones
# the installed allocrr has.
#   source scripts/allocrr-completion.bash    (installed: share/bash-completion/completions/allocrr)

_allocrr_commands()
{
	[ -n "${_allocrr_cmds-}" ] ||
		_allocrr_cmds=$("${1:-allocrr}" --help 2>/dev/null |
			sed -n '/^commands:/,/^$/{s/^  \([a-z][a-z0-9-]*\) .*/\1/p}')
	printf '%s\n' $_allocrr_cmds
}

# the long and short options of one command, from its --help
_allocrr_options()
{
	local var=_allocrr_opts_${2//-/_}
	if [ -z "${!var-}" ]; then
		printf -v "$var" '%s' "$("${1:-allocrr}" "$2" --help 2>/dev/null |
			grep -oE '(^|[ ,[])--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^[ ,[]//' | sort -u | tr '\n' ' ')"
	fi
	printf '%s\n' ${!var}
}

_allocrr()
{
	local cur prev words cword
	if declare -F _init_completion >/dev/null; then
		_init_completion || return
	else
		cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
		words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
	fi
	local prog=${words[0]} cmd= i
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		-*) ;;
		*) cmd=${words[i]}; break ;;
		esac
	done
	if [ -z "$cmd" ]; then
		COMPREPLY=($(compgen -W "$(_allocrr_commands "$prog") --help --version" -- "$cur"))
		return
	fi
	# after `record [options] --` (or its first non-option word): the command to record
	if [ "$cmd" = record ]; then
		for ((i = i + 1; i < cword; i++)); do
			case ${words[i]} in
			--) break ;;
			-o|--output|--rss-interval) ((i++)) ;;
			-*) ;;
			*) break ;;
			esac
		done
		if ((i < cword)); then
			COMPREPLY=($(compgen -c -- "$cur"))
			((cword - i > 1 || ${#COMPREPLY[@]} == 0)) && COMPREPLY=($(compgen -f -- "$cur"))
			return
		fi
	fi
	case $prev in
	-a|--allocator)
		COMPREPLY=($(compgen -W "builtin glibc jemalloc mimalloc tcmalloc" -- "$cur"))
		[[ $cur == */* ]] && COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	-t|--threads)
		[ "$cmd" = replay ] && { COMPREPLY=($(compgen -W "serial parallel" -- "$cur")); return; } ;;
	--touch) COMPREPLY=($(compgen -W "none page all" -- "$cur")); return ;;
	--cache-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	-o|--output) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	-e|--op)
		[ "$cmd" = dump ] && { COMPREPLY=($(compgen -W "calls malloc calloc realloc free posix_memalign
			aligned_alloc memalign valloc pvalloc reallocarray rss fork exec thread_start thread_exit" -- "$cur"))
			return; } ;;
	--rss-interval|--samples|--latency-every|--pace|--select|--from|--to|-n|--limit|--tid) return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_allocrr_options "$prog" "$cmd")" -- "$cur"))
		return
	fi
	# traces first, then any file
	COMPREPLY=($(compgen -f -X '!*.atr*' -- "$cur") $(compgen -d -- "$cur"))
	[ ${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -f -- "$cur"))
}
complete -F _allocrr allocrr
