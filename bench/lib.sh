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
