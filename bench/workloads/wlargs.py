"""The one argument every workload generator takes: a positive scale."""
import sys


def scale(argv, doc, default):
    """The scale from argv[1] (default if absent), or an exit code after
    printing the usage paragraph of doc: 0 for --help, 2 for bad usage."""
    usage = doc.split("\n\n")[1].strip() + "\n"
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        sys.stdout.write(usage)
        return None, 0
    try:
        n = int(argv[1]) if len(argv) > 1 else default
        if n < 1 or len(argv) > 2:
            raise ValueError
    except ValueError:
        sys.stderr.write(usage)
        return None, 2
    return n, None
