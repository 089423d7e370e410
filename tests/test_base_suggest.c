/* base/zs_suggest: the nearest registered name to a misspelt one, and
 * nothing when no name is close. */
#include "zs_suggest.h"
#include "zs_test.h"

static const char *best(const char *word)
{
    static const char *const names[] = {"local",     "te-cp",    "llama-cp", "ulysses", "zeppelin",
                                        "hybrid-dp", "plain-4d", "fixed-4d", "wlb-llm", "usp"};
    zs_suggest s;
    zs_suggest_init(&s, word);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        zs_suggest_add(&s, names[i]);
    return zs_suggest_best(&s);
}

static void expect(const char *word, const char *want)
{
    const char *got = best(word);
    if (!want) {
        if (got)
            fprintf(stderr, "'%s': expected no suggestion, got '%s'\n", word, got);
        CU_ASSERT_PTR_NULL(got);
        return;
    }
    if (!got || strcmp(got, want))
        fprintf(stderr, "'%s': expected '%s', got '%s'\n", word, want, got ? got : "(none)");
    CU_ASSERT(got && !strcmp(got, want));
}

static void test_nearest(void)
{
    expect("zeppeln", "zeppelin");  /* a deletion */
    expect("zepplein", "zeppelin"); /* two neighbours swapped: one edit */
    expect("te-cpp", "te-cp");      /* an insertion */
    expect("WLB-LMM", "wlb-llm");   /* case does not count, one substitution */
    expect("ulyses", "ulysses");
    expect("plain4d", "plain-4d");
    expect("bogus", NULL);            /* nothing close */
    expect("x", NULL);                /* one letter: only one edit allowed */
    expect("zeppelinzeppelin", NULL); /* far too long */
}

static void test_phrase(void)
{
    zs_suggest s;
    char buf[64];
    zs_suggest_init(&s, "simm");
    zs_suggest_add(&s, "sim");
    zs_suggest_add(&s, "analytic");
    zs_suggest_phrase(&s, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "did you mean 'sim'? ");
    zs_suggest_init(&s, "gpu");
    zs_suggest_add(&s, "analytic");
    zs_suggest_phrase(&s, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "");
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {
        {"nearest", test_nearest}, {"phrase", test_phrase}, {NULL, NULL}};
    static const zs_test_suite suites[] = {{"suggest", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
