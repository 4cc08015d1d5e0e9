/* A program with two variants for `kbench explain`'s acceptance test and
   scripts/explain/aa.sh: VARIANT=b spends about 10% more time in
   named_hotspot (its share of the samples goes from ~9% to ~17%); any
   other value is variant a. The rest of the work is four functions. */
#include <stdlib.h>
#include <string.h>
static volatile unsigned long sink;
#define WORK(name)                                                           \
    __attribute__((noinline)) void name(long n) {                            \
        unsigned long x = 1;                                                 \
        for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + (unsigned long)i; \
        sink += x;                                                           \
    }
WORK(work_1)
WORK(work_2)
WORK(work_3)
WORK(work_4)
WORK(named_hotspot)
int main(void) {
    const char *v = getenv("VARIANT");
    long n = 8000000;
    work_1(n);
    work_2(n);
    work_3(n);
    work_4(n);
    named_hotspot(v && strcmp(v, "b") == 0 ? 4 * n / 5 : 2 * n / 5);
    return 0;
}
