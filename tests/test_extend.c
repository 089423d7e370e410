/* Extending zepsim (docs/ARCHITECTURE.md, "Where to add"): a toy method
 * (toy/toy_planner.c) and a toy backend (toy/toy_backend.c), defined in
 * one file each and registered by one row each, run through the same
 * path as the built-in ones: found by name in any case, with the
 * nearest-name hint, accepted by a figure spec, planned and checked by the
 * plan validator, run by a study point on either backend. Nothing else in
 * the tree names them. */
#include "toy/toy.h"
#include "zs_point.h"
#include "zs_spec.h"
#include "zs_test.h"

/* The one table this program adds: a row per extension. */
static void register_rows(void)
{
    static int done;
    if (done++)
        return;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_planner_register(&zs_toy_planner, &e), &e);
    ZS_ASSERT_OK(zs_backend_register(&zs_toy_backend, &e), &e);
}

static void test_registry(void)
{
    register_rows();
    CU_ASSERT_PTR_EQUAL(zs_planner_find("TOY-RR"), &zs_toy_planner);
    CU_ASSERT_PTR_EQUAL(zs_planner_at(zs_planner_count() - 1), &zs_toy_planner);
    CU_ASSERT_PTR_EQUAL(zs_backend_find("toy-unfolded"), &zs_toy_backend);
    char names[1024];
    zs_planner_names(names, sizeof names);
    ZS_ASSERT_STR_CONTAINS(names, "toy-rr");
    zs_backend_names("|", names, sizeof names);
    ZS_ASSERT_STR_CONTAINS(names, "|toy-unfolded");
    /* a misspelling gets the added name as its nearest */
    zs_err e;
    zs_err_clear(&e);
    const zs_planner_ops *p = NULL;
    CU_ASSERT_EQUAL(zs_planner_lookup("toy-r", "--method", &p, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.fix, "toy-rr");
    /* a second row with a taken name, or without a plan, is refused */
    zs_err_clear(&e);
    CU_ASSERT_EQUAL(zs_planner_register(&zs_toy_planner, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.what, "already registered");
    zs_planner_ops bad = {.name = "no-plan"};
    zs_err_clear(&e);
    CU_ASSERT_EQUAL(zs_planner_register(&bad, &e), ZS_EUSAGE);
    zs_backend clash = zs_toy_backend;
    clash.name = "Analytic";
    zs_err_clear(&e);
    CU_ASSERT_EQUAL(zs_backend_register(&clash, &e), ZS_EUSAGE);
}

static void small_point(zs_point_cfg *c, const char *method, const char *backend)
{
    zs_point_cfg_default(c);
    snprintf(c->model, sizeof c->model, "llama-550m");
    snprintf(c->method, sizeof c->method, "%s", method);
    snprintf(c->backend, sizeof c->backend, "%s", backend);
    c->nodes = 2;
    c->context = 32768;
    c->iterations = 1;
    c->validate = 1;
}

static void test_point_runs(void)
{
    register_rows();
    zs_err e;
    zs_err_clear(&e);
    zs_point_cfg c;
    zs_point_result toy = {0}, ref = {0};
    /* the toy method, validated, on the toy backend ... */
    small_point(&c, "toy-rr", "toy-unfolded");
    ZS_ASSERT_OK(zs_point_run(&c, NULL, NULL, &toy, &e), &e);
    CU_ASSERT(toy.tokens_per_s > 0 && isfinite(toy.tokens_per_s));
    ZS_ASSERT_STR_CONTAINS(toy.notes, "dealt round-robin");
    /* ... gives the analytic backend's figures with folding off */
    small_point(&c, "toy-rr", "analytic");
    c.fold = ZS_FOLD_OFF;
    ZS_ASSERT_OK(zs_point_run(&c, NULL, NULL, &ref, &e), &e);
    CU_ASSERT_DOUBLE_EQUAL(toy.iter_time, ref.iter_time, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(toy.tokens, ref.tokens, 0.0);
    ZS_ASSERT_INT_EQ(toy.ops, ref.ops);
    zs_point_result_clear(&toy);
    zs_point_result_clear(&ref);
    /* and a built-in method runs on the toy backend */
    small_point(&c, "te-cp", "toy-unfolded");
    ZS_ASSERT_OK(zs_point_run(&c, NULL, NULL, &toy, &e), &e);
    CU_ASSERT(toy.tokens_per_s > 0);
    zs_point_result_clear(&toy);
}

static void test_spec_accepts(void)
{
    register_rows();
    static const char spec[] =
        "{\"name\": \"toy\", \"title\": \"Toy\",\n"
        " \"base\": {\"model\": \"llama-550m\", \"nodes\": 2, \"context\": 32768,\n"
        "          \"iterations\": 1, \"backend\": \"Toy-Unfolded\"},\n"
        " \"series\": [{\"label\": \"Toy\", \"method\": \"TOY-RR\"},\n"
        "            {\"label\": \"Local\", \"method\": \"local\"}],\n"
        " \"baseline\": \"Local\", \"plot\": {\"metric\": \"speedup\"}}\n";
    zs_spec *s = NULL;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_spec_load_text("toy.json", spec, &s, &e), &e);
    zs_spec_free(s);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"registry", test_registry},
                                         {"point_runs", test_point_runs},
                                         {"spec_accepts", test_spec_accepts},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"extend", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
