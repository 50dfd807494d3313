/*
 * hog.c: Filebench 1.5-alpha3's hog flowop loop (flowoplib_hog), with the
 * pointer to the thread memory read from a struct as Filebench does:
 *     for (i = 0; i < value; i++) *(threadflow->tf_mem) = 1;
 * Built with gcc -O2 the loop loads the pointer and stores a byte every
 * iteration (a char store may alias the pointer). bench/wml/run.sh compares
 * the time per iteration with strata-wml's hog.
 *
 * usage: hog VALUE REPS      prints: CPU ns per iteration
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct threadflow { char name[128]; int instance; void *pad[8]; char *tf_mem; uint64_t memsize; };

__attribute__((noinline)) static void hog(struct threadflow *tf, uint64_t value)
{
	int i;
	if (tf->tf_mem != NULL)
		for (i = 0; i < value; i++)
			*(tf->tf_mem) = 1;
}

int main(int argc, char **argv)
{
	if (argc != 3) { fprintf(stderr, "usage: hog VALUE REPS\n"); return 2; }
	uint64_t value = strtoull(argv[1], 0, 10);
	int reps = atoi(argv[2]);
	struct threadflow *tf = calloc(1, sizeof *tf);
	tf->tf_mem = calloc(1, 1 << 20);
	struct timespec a, b;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	for (int r = 0; r < reps; r++)
		hog(tf, value);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	printf("%.4f\n", s * 1e9 / ((double)value * reps));
	return 0;
}
