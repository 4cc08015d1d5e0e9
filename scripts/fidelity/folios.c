/*
 * The page cache folios of a file: how many of its pages sit in one-page
 * folios and how large the larger ones are (docs/accuracy.md, "read1 and
 * read2: the file's folios"). It maps the file, touches every page, and
 * reads each page's frame from /proc/self/pagemap and its flags from
 * /proc/kpageflags (COMPOUND_HEAD, COMPOUND_TAIL), so it needs root.
 * A running benchmark's unlinked file is reachable as /proc/PID/fd/N.
 *
 *   cc -O2 -o folios scripts/fidelity/folios.c
 *   sudo ./folios /proc/$(pgrep -n read1_processes)/fd/6
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEAD (1ULL << 15)
#define TAIL (1ULL << 16)
#define PFN_MASK ((1ULL << 55) - 1)

int main(int argc, char **argv)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct stat st;
	int fd, pm, kf;

	if (argc != 2) {
		fprintf(stderr, "usage: folios FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
		perror(argv[1]);
		return 2;
	}
	size_t pages = (st.st_size + pg - 1) / pg;
	volatile char *m = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	pm = open("/proc/self/pagemap", O_RDONLY);
	kf = open("/proc/kpageflags", O_RDONLY);
	if (m == MAP_FAILED || pm < 0 || kf < 0) {
		perror("mmap, /proc/self/pagemap or /proc/kpageflags");
		return 1;
	}
	size_t small = 0, large = 0, run = 0;
	printf("%s: %zu pages; large folios (pages):", argv[1], pages);
	for (size_t i = 0; i < pages; i++) {
		uint64_t e = 0, f = 0;

		(void)m[i * pg];
		pread(pm, &e, 8, ((uintptr_t)m / pg + i) * 8);
		if ((e & PFN_MASK) == 0) {
			perror("no frame numbers in pagemap (not root?)");
			return 1;
		}
		pread(kf, &f, 8, (e & PFN_MASK) * 8);
		if (f & TAIL) {
			run++;
			continue;
		}
		if (run)
			printf(" %zu", run);
		run = 0;
		if (f & HEAD) {
			large++;
			run = 1;
		} else {
			small++;
		}
	}
	if (run)
		printf(" %zu", run);
	printf("\n%zu one-page folios, %zu larger folios\n", small, large);
	return 0;
}
