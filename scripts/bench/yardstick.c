// The bench's yardstick: how fast this machine runs a fixed piece of work right now.
//
// A VM's cores speed up and slow down with what the neighbours do: here every server thread's
// CPU per transaction moves by 5-10% together from one 12 s window to the next. Dividing the
// server's CPU per transaction by the yardstick's CPU per block over the same window takes
// most of that out. The block mixes arithmetic and scattered memory traffic (a 512 KB table),
// as a server's work does, and is timed in this thread's CPU time: waiting for a core is not
// slowness. Between blocks it sleeps, so it takes about 1.5% of one core.
//
// Output: one line per block, "MONOTONIC_NS CPU_NS", flushed, until killed.
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define BLOCK_STEPS 200000
#define TABLE_WORDS (1 << 16)
#define PAUSE_NS 20000000L

static uint64_t table[TABLE_WORDS];

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A linear congruential walk over the table: the same steps every block. */
static uint64_t run_block(uint64_t state)
{
	for (int i = 0; i < BLOCK_STEPS; i++) {
		state = state * 6364136223846793005ULL + 1442695040888963407ULL;
		table[(state >> 20) % TABLE_WORDS] += state;
	}
	return state;
}

int main(void)
{
	const struct timespec pause = { .tv_nsec = PAUSE_NS };
	uint64_t state = 1;

	for (;;) {
		uint64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID);

		state = run_block(state);
		if (printf("%llu %llu\n", (unsigned long long)clock_ns(CLOCK_MONOTONIC),
			   (unsigned long long)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - start)) < 0 ||
		    fflush(stdout) != 0)
			return table[state % TABLE_WORDS] == 0;  /* reader gone; keeps the work live */
		nanosleep(&pause, NULL);
	}
}
