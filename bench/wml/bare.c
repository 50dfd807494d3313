/*
 * bare.c: the system calls of webserver.f, varmail.f and fileserver.f in a
 * plain C loop, with no statistics, no latency timing and no shared pick
 * state (each thread owns the files whose index % nthreads == its id).
 * Files are picked like Filebench's shared rotors (one global round-robin
 * per kind over all threads), but lock-free: an atomic rotor and a
 * compare-and-swap on a per-entry state byte. It is the "bare loop" that
 * strata-wml's speed is compared with (bench/wml/run.sh). The fileset comes from `strata-wml create`, whose
 * listing (fileset, path, size, exists) is read from a file.
 *
 * usage: bare MODE LISTING NTHREADS SECONDS    (MODE: webserver|varmail|fileserver)
 * prints: ops/s total_ops elapsed_s
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define IOSIZE (1 << 20)
#define APPEND 16384

enum { ABSENT = 0, PRESENT = 1, BUSY = 2 };
struct entry { char *path; long size; _Atomic char state; };
struct fileset { struct entry *e; int n; };

static struct fileset big, logs;
static int nthreads;
static atomic_int stop;
static const char *mode;

struct worker { int id; long ops; unsigned seed; char *buf; pthread_t th; };
static atomic_uint rot_ex, rot_ne;

static void load(const char *listing)
{
	FILE *f = fopen(listing, "r");
	char line[4096];
	if (!f) { perror(listing); exit(2); }
	while (fgets(line, sizeof line, f)) {
		char *fs = strtok(line, "\t"), *p = strtok(NULL, "\t"), *sz = strtok(NULL, "\t"), *ex = strtok(NULL, "\t\n");
		if (!ex) continue;
		struct fileset *s = strcmp(fs, "logfiles") == 0 ? &logs : &big;
		s->e = realloc(s->e, sizeof(struct entry) * (s->n + 1));
		s->e[s->n].path = strdup(p);
		s->e[s->n].size = atol(sz);
		atomic_init(&s->e[s->n].state, atoi(ex) ? PRESENT : ABSENT);
		s->n++;
	}
	fclose(f);
}

/* next entry in round-robin order whose state is `want`, marked BUSY */
static int pick(int want, atomic_uint *rot)
{
	unsigned start = atomic_fetch_add_explicit(rot, 1, memory_order_relaxed);
	for (int k = 0; k < big.n; k++) {
		int i = (start + k) % big.n;
		char s = want;
		if (atomic_load_explicit(&big.e[i].state, memory_order_relaxed) == want &&
		    atomic_compare_exchange_strong(&big.e[i].state, &s, BUSY))
			return i;
	}
	return -1;
}

static void release(int i, int state)
{
	atomic_store_explicit(&big.e[i].state, state, memory_order_release);
}

static void readwhole(int fd, char *buf)
{
	lseek(fd, 0, SEEK_SET);
	while (read(fd, buf, IOSIZE) > 0)
		;
}

static void appendrand(struct worker *w, int fd)
{
	int n = rand_r(&w->seed) % APPEND;
	if (n) { lseek(fd, 0, SEEK_END); write(fd, w->buf, n); }
}

static int open_existing(int flags)
{
	int i = pick(PRESENT, &rot_ex);
	if (i < 0) { fprintf(stderr, "no existing file\n"); exit(1); }
	int fd = open(big.e[i].path, flags);
	release(i, PRESENT);
	return fd;
}

static void webserver(struct worker *w, int *logfd)
{
	for (int k = 0; k < 10; k++) {
		int fd = open_existing(O_RDONLY);
		readwhole(fd, w->buf);
		close(fd);
	}
	if (*logfd < 0) *logfd = open(logs.e[0].path, O_RDWR);
	appendrand(w, *logfd);
	w->ops += 31;
}

static int create_new(long *size)
{
	int i = pick(ABSENT, &rot_ne);
	if (i < 0) { fprintf(stderr, "no free file\n"); exit(1); }
	int fd = open(big.e[i].path, O_RDWR | O_CREAT, 0666);
	release(i, PRESENT);
	*size = big.e[i].size;
	return fd;
}

static void delete_one(void)
{
	int i = pick(PRESENT, &rot_ex);
	if (i < 0) return;
	unlink(big.e[i].path);
	release(i, ABSENT);
}

static void varmail(struct worker *w)
{
	long size;
	delete_one();
	int fd = create_new(&size);
	appendrand(w, fd);
	fsync(fd);
	close(fd);
	fd = open_existing(O_RDWR);
	readwhole(fd, w->buf);
	appendrand(w, fd);
	fsync(fd);
	close(fd);
	fd = open_existing(O_RDWR);
	readwhole(fd, w->buf);
	close(fd);
	w->ops += 13;
}

static void fileserver(struct worker *w)
{
	struct stat st;
	long size;
	int fd = create_new(&size);
	for (long left = size; left > 0; left -= IOSIZE)
		write(fd, w->buf, left < IOSIZE ? left : IOSIZE);
	close(fd);
	fd = open_existing(O_RDWR);
	appendrand(w, fd);
	close(fd);
	fd = open_existing(O_RDWR);
	readwhole(fd, w->buf);
	close(fd);
	delete_one();
	int s = pick(PRESENT, &rot_ex);
	if (s >= 0) {
		stat(big.e[s].path, &st);
		release(s, PRESENT);
	}
	w->ops += 11;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	int logfd = -1;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (mode[0] == 'w') webserver(w, &logfd);
		else if (mode[0] == 'v') varmail(w);
		else fileserver(w);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 5) { fprintf(stderr, "usage: bare MODE LISTING NTHREADS SECONDS\n"); return 2; }
	mode = argv[1];
	load(argv[2]);
	nthreads = atoi(argv[3]);
	double secs = atof(argv[4]);
	struct worker *ws = calloc(nthreads, sizeof *ws);
	struct timespec t0, t1;
	for (int i = 0; i < nthreads; i++) {
		ws[i].id = i;
		ws[i].seed = 4357 + i;
		ws[i].buf = calloc(1, IOSIZE);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&ws[i].th, NULL, run, &ws[i]);
	usleep((useconds_t)(secs * 1e6));
	atomic_store(&stop, 1);
	long ops = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(ws[i].th, NULL);
		ops += ws[i].ops;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double el = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%.0f %ld %.3f\n", ops / el, ops, el);
	return 0;
}
