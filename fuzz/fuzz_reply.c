/* What a server may answer (src/lock.c, src/inspect.c): any bytes that make one RESP reply,
 * read as the answer to the acquire, renew and status scripts. Both files are compiled into
 * the target so that their readers, which are static, can be called without a server. */
#include "../src/inspect.c"
#include "../src/lock.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct lock l;
	static bool ready;
	struct lock_state st;
	struct reply *r;
	long long age;
	char run_id[41];

	if (!ready && lock_init(&l, "job", 30 * NS_PER_S) < 0)
		abort();
	ready = true;
	if (!(r = reply_parse((const char *)data, size)))
		return 0;
	parse_acquire(&l, "/fuzz.sock", r, &age, run_id);
	read_renewal(&l, "/fuzz.sock", r, clock_now());
	read_state(&l, "/fuzz.sock", r, &st);
	reply_free(r);
	return 0;
}
