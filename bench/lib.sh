# bench/lib.sh: shared by the bench scripts; source it after defining usage().
#
# bench_args "$@": -h/--help prints usage and exits 0; any other option, or
# more than one argument (the build directory), prints usage on stderr and
# exits 2.
bench_args() {
	case "${1:-}" in
	-h | --help)
		usage
		exit 0
		;;
	-*)
		usage >&2
		exit 2
		;;
	esac
	if [ $# -gt 1 ]; then
		usage >&2
		exit 2
	fi
}

# bench_cc1 C_FILE S_FILE: sets the array cc1_cmd to gcc's compiler proper
# exactly as the driver runs it for `gcc -O1 -c C_FILE` (read from gcc -###),
# writing its assembly to S_FILE; exits 1 when gcc names no cc1.
bench_cc1() {
	local src=$1 out=$2
	cc1_cmd=()
	eval "set -- $(gcc -### -O1 -c "$src" -o "${src%.c}.o" 2>&1 | grep -E '^ [^ ]*/cc1 ')"
	while [ $# -gt 0 ]; do
		if [ "$1" = -o ]; then
			cc1_cmd+=(-o "$out")
			shift 2
			continue
		fi
		cc1_cmd+=("$1")
		shift
	done
	if [ ${#cc1_cmd[@]} -eq 0 ]; then
		echo "$(basename "$0"): cannot find cc1's command line in 'gcc -###'" >&2
		exit 1
	fi
}

# bench_setup [BUILD_DIR]: sets here (bench/), src (the repository), build
# (BUILD_DIR made absolute, default build) and runs (RUNS, default 3; exits 2
# unless it is a positive integer).
bench_setup() {
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	src=$(cd "$here/.." && pwd)
	build=$(cd "${1:-build}" && pwd) || exit 1
	runs=${RUNS:-3}
	case "$runs" in '' | *[!0-9]* | 0)
		echo "$(basename "$0" .sh): RUNS must be a positive integer" >&2
		exit 2
		;;
	esac
}
