/*
 * bare.c: the system calls of webserver.f, varmail.f and fileserver.f in a
 * plain C loop, with no statistics, no latency timing and no shared pick
 * state (each thread owns the files whose index % nthreads == its id).
 * It is the "bare loop" that strata-wml's speed is compared with
 * (bench/wml/run.sh). The fileset comes from `strata-wml create`, whose
 * listing (fileset, path, size, exists) is read from a file.
 *
 * usage: bare MODE LISTING NTHREADS SECONDS    (MODE: webserver|varmail|fileserver)
 * prints: ops/s
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

struct entry { char *path; long size; int exists; };
struct fileset { struct entry *e; int n; };

static struct fileset big, logs;
static int nthreads;
static atomic_int stop;
static const char *mode;

struct worker { int id; long ops; unsigned seed; int rot_ex, rot_ne; char *buf; pthread_t th; };

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
		s->e[s->n++] = (struct entry){ strdup(p), atol(sz), atoi(ex) };
	}
	fclose(f);
}

/* next entry of this thread's partition (index % nthreads == id) with exists == want */
static int pick(struct worker *w, int want, int *rot)
{
	int mine = (big.n - w->id + nthreads - 1) / nthreads;
	for (int k = 0; k < mine; k++) {
		int j = (*rot + k) % mine, i = w->id + j * nthreads;
		if (big.e[i].exists == want) { *rot = j + 1; return i; }
	}
	return -1;
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

static int open_existing(struct worker *w, int flags)
{
	int i = pick(w, 1, &w->rot_ex);
	if (i < 0) { fprintf(stderr, "no existing file\n"); exit(1); }
	return open(big.e[i].path, flags);
}

static void webserver(struct worker *w, int *logfd)
{
	for (int k = 0; k < 10; k++) {
		int fd = open_existing(w, O_RDONLY);
		readwhole(fd, w->buf);
		close(fd);
	}
	if (*logfd < 0) *logfd = open(logs.e[0].path, O_RDWR);
	appendrand(w, *logfd);
	w->ops += 31;
}

static int create_new(struct worker *w)
{
	int i = pick(w, 0, &w->rot_ne);
	if (i < 0) { fprintf(stderr, "no free file\n"); exit(1); }
	big.e[i].exists = 1;
	return i;
}

static void delete_one(struct worker *w)
{
	int i = pick(w, 1, &w->rot_ex);
	if (i < 0) return;
	unlink(big.e[i].path);
	big.e[i].exists = 0;
}

static void varmail(struct worker *w)
{
	delete_one(w);
	int i = create_new(w);
	int fd = open(big.e[i].path, O_RDWR | O_CREAT, 0666);
	appendrand(w, fd);
	fsync(fd);
	close(fd);
	fd = open_existing(w, O_RDWR);
	readwhole(fd, w->buf);
	appendrand(w, fd);
	fsync(fd);
	close(fd);
	fd = open_existing(w, O_RDWR);
	readwhole(fd, w->buf);
	close(fd);
	w->ops += 13;
}

static void fileserver(struct worker *w)
{
	struct stat st;
	int i = create_new(w);
	int fd = open(big.e[i].path, O_RDWR | O_CREAT, 0666);
	for (long left = big.e[i].size; left > 0; left -= IOSIZE)
		write(fd, w->buf, left < IOSIZE ? left : IOSIZE);
	close(fd);
	fd = open_existing(w, O_RDWR);
	appendrand(w, fd);
	close(fd);
	fd = open_existing(w, O_RDWR);
	readwhole(fd, w->buf);
	close(fd);
	delete_one(w);
	int s = pick(w, 1, &w->rot_ex);
	if (s >= 0) stat(big.e[s].path, &st);
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
	printf("%.0f\n", ops / el);
	return 0;
}
