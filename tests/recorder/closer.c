/*
 * closer.c FILE - close every fd above 2, as daemons and shells do, open
 * FILE (it gets fd 3), allocate enough for several chunks, write a line.
 * The recorder must neither lose its trace nor write into FILE.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	for (int fd = 3; fd < 4096; fd++)
		close(fd);
	int f = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (int i = 0; i < 300000; i++)
		free(malloc((size_t)(i % 100) + 1));
	if (write(f, "hello\n", 6) != 6)
		return 3;
	return close(f) ? 4 : 0;
}
