/*
 * clockshim.c: a fake wall clock for snowid's TAP tests, preloaded into a
 * server (and its pg_ctl) with LD_PRELOAD.
 *
 * The file named by SNOWID_FAKE_CLOCK_FILE holds an offset in seconds from
 * the real clock, a signed decimal such as "-0.5", "+0", "-30" or
 * "+3600.25" (SnowidTest::write_clock_offset writes it aside and renames
 * it).  Every read of CLOCK_REALTIME or CLOCK_REALTIME_COARSE through
 * clock_gettime, and every gettimeofday and time, reads the file again and
 * adds the offset, so that a running server sees a step at once.  Every
 * other clock (CLOCK_MONOTONIC and the rest) is the real one.  A missing,
 * empty or unparsable file is an offset of 0.
 *
 * PostgreSQL reads the clock from its SIGALRM handler (timeout.c), which
 * may interrupt malloc or stdio; so a clock read here does only what is
 * async-signal-safe: open, read and close of the file into a buffer on the
 * stack and a hand-written parse.  No malloc, no stdio, no locks, no lazy
 * symbol lookup (the real functions are looked up once, in the
 * constructor), and errno is left as it was.
 *
 * Built by SnowidTest.pm at test time:
 *   gcc -shared -fPIC -O2 -o clockshim.so clockshim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define SHIM_ENV "SNOWID_FAKE_CLOCK_FILE"
#define NSEC_PER_SEC INT64_C(1000000000)

typedef int (*clock_gettime_fn) (clockid_t, struct timespec *);
typedef int (*gettimeofday_fn) (struct timeval *, void *);

static clock_gettime_fn real_clock_gettime;
static gettimeofday_fn real_gettimeofday;

/* The offset file's path, copied from the environment once; "" = none. */
static char offset_path[4096];

__attribute__((constructor))
static void
shim_init(void)
{
	const char *path = getenv(SHIM_ENV);

	real_clock_gettime = (clock_gettime_fn) dlsym(RTLD_NEXT, "clock_gettime");
	real_gettimeofday = (gettimeofday_fn) dlsym(RTLD_NEXT, "gettimeofday");
	if (path != NULL && strlen(path) < sizeof(offset_path))
		memcpy(offset_path, path, strlen(path) + 1);
}

/*
 * Parse "[space][+|-]digits[.digits][space]" into nanoseconds.  Returns 0
 * and sets *ns, or -1 for anything else.  Digits past the ninth after the
 * point are ignored; more than 9 before it (31 years and more) are refused,
 * so that the nanoseconds fit in 64 bits.
 */
static int
parse_offset(const char *s, size_t len, int64_t *ns)
{
	size_t		i = 0;
	int			neg = 0;
	int			digits = 0;
	int64_t		sec = 0;
	int64_t		frac = 0;
	int64_t		scale = NSEC_PER_SEC;

	while (i < len && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (i < len && (s[i] == '+' || s[i] == '-'))
		neg = (s[i++] == '-');
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
	{
		if (++digits > 9)
			return -1;
		sec = sec * 10 + (s[i] - '0');
	}
	if (i < len && s[i] == '.')
	{
		i++;
		for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
		{
			digits++;
			if (scale > 1)
			{
				scale /= 10;
				frac += (s[i] - '0') * scale;
			}
		}
	}
	if (digits == 0)
		return -1;
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	if (i != len)
		return -1;
	*ns = sec * NSEC_PER_SEC + frac;
	if (neg)
		*ns = -*ns;
	return 0;
}

/* The current offset in nanoseconds (0 if none); errno is kept. */
static int64_t
current_offset_ns(void)
{
	int			saved_errno = errno;
	char		buf[64];
	size_t		len = 0;
	int64_t		ns = 0;
	int			fd;

	if (offset_path[0] == '\0')
		return 0;
	do
		fd = open(offset_path, O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd >= 0)
	{
		for (;;)
		{
			ssize_t		n = read(fd, buf + len, sizeof(buf) - len);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
			{
				if (n < 0)
					len = 0;	/* a failed read: no offset */
				break;
			}
			len += (size_t) n;
			if (len == sizeof(buf))
			{
				len = 0;		/* too long to be an offset */
				break;
			}
		}
		close(fd);
		if (len == 0 || parse_offset(buf, len, &ns) != 0)
			ns = 0;
	}
	errno = saved_errno;
	return ns;
}

/* The real clock, also before the constructor has run. */
static int
read_real_clock(clockid_t clk, struct timespec *ts)
{
	if (real_clock_gettime != NULL)
		return real_clock_gettime(clk, ts);
	return (int) syscall(SYS_clock_gettime, clk, ts);
}

static void
shift_timespec(struct timespec *ts, int64_t ns)
{
	int64_t		total = (int64_t) ts->tv_nsec + ns % NSEC_PER_SEC;

	ts->tv_sec += (time_t) (ns / NSEC_PER_SEC);
	if (total < 0)
	{
		total += NSEC_PER_SEC;
		ts->tv_sec--;
	}
	else if (total >= NSEC_PER_SEC)
	{
		total -= NSEC_PER_SEC;
		ts->tv_sec++;
	}
	ts->tv_nsec = (long) total;
}

int
clock_gettime(clockid_t clk, struct timespec *ts)
{
	int64_t		ns;
	int			rc;

	if (clk != CLOCK_REALTIME && clk != CLOCK_REALTIME_COARSE)
		return read_real_clock(clk, ts);
	ns = current_offset_ns();
	rc = read_real_clock(clk, ts);
	if (rc == 0)
		shift_timespec(ts, ns);
	return rc;
}

int
gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	int64_t		ns = current_offset_ns();
	int			rc;

	if (real_gettimeofday != NULL)
		rc = real_gettimeofday(tv, tz);
	else
		rc = (int) syscall(SYS_gettimeofday, tv, tz);
	if (rc == 0)
	{
		struct timespec ts;

		ts.tv_sec = tv->tv_sec;
		ts.tv_nsec = (long) tv->tv_usec * 1000;
		shift_timespec(&ts, ns);
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = (suseconds_t) (ts.tv_nsec / 1000);
	}
	return rc;
}

/*
 * time() from the real CLOCK_REALTIME, not the real time(): a fractional
 * offset must carry into the seconds as it does for the other two.
 */
time_t
time(time_t *t)
{
	struct timespec ts;
	int64_t		ns = current_offset_ns();
	time_t		now;

	if (read_real_clock(CLOCK_REALTIME, &ts) != 0)
		return (time_t) -1;
	shift_timespec(&ts, ns);
	now = ts.tv_sec;
	if (t != NULL)
		*t = now;
	return now;
}
