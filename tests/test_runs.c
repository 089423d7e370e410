/* The published-runs reader (models/zs_runs.h): a good file with comments,
 * blanks and empty (unpublished) cells; every bad-cell class refused with
 * file:line and the column (wrong header, non-numeric, gpus not divisible
 * by tp pp cp, gbs not divisible by mbs dp, a model path, unknown task
 * or precision, fewer layers than pp x vp chunks, no measurement, wrong cell count,
 * no rows, a NUL byte); the row bound; names in any case, and a model
 * without a preset read for the predictor to give a reason. */
#include <stdlib.h>

#include "zs_runs.h"
#include "zs_test.h"

#define HDR                                                                                        \
    "model,task,gpus,gbs,mbs,seq,tp,pp,cp,vp,precision,recompute,zero,tokens_s_gpu,"               \
    "model_tflops_gpu\n"

/* Writes text as file name and reads it, which must succeed with two rows. */
static void read_two(const char *name, const char *text, zs_runs *r)
{
    const char *p = zs_test_write(name, text);
    zs_err e;
    ZS_ASSERT_OK(zs_runs_read(p, r, &e), &e);
    ZS_ASSERT_INT_EQ(r->n, 2);
}

static void test_good(void)
{
    zs_runs r;
    read_two("good.csv",
             "# a comment\n\n" HDR "# another\n"
             "llama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8,,,16847,776\n"
             "llama3-70b,sft,64,128,1,8192,4,4,2,5,bf16,selective,0,,738\r\n",
             &r);
    const zs_run *a = &r.rows[0], *b = &r.rows[1];
    ZS_ASSERT_INT_EQ(a->line, 5);
    ZS_ASSERT_STR_EQ(a->model, "llama2-7b");
    ZS_ASSERT_INT_EQ(a->task, ZS_TASK_PRETRAIN);
    ZS_ASSERT_INT_EQ(a->precision, ZS_PREC_FP8);
    ZS_ASSERT_INT_EQ(a->recompute, -1);
    ZS_ASSERT_INT_EQ(a->zero, -1);
    ZS_ASSERT_NEAR(a->tokens_s_gpu, 16847, 1e-9);
    ZS_ASSERT_INT_EQ(zs_run_dp(a), 8);
    ZS_ASSERT_INT_EQ(zs_run_microbatches(a), 16);
    ZS_ASSERT_INT_EQ(b->line, 6);
    ZS_ASSERT_INT_EQ(b->task, ZS_TASK_SFT);
    ZS_ASSERT_INT_EQ(b->recompute, ZS_STEP_RC_SELECTIVE);
    ZS_ASSERT_INT_EQ(b->zero, 0);
    ZS_ASSERT_NEAR(b->tokens_s_gpu, 0, 0);
    ZS_ASSERT_INT_EQ(zs_run_dp(b), 2);
    ZS_ASSERT_INT_EQ(zs_run_microbatches(b), 64);
    zs_runs_free(&r);
}

/* A file whose line 3 is row; the error names line 3 and contains want. */
static void bad_row(const char *row, const char *want)
{
    char text[1024];
    snprintf(text, sizeof text, "# c\n" HDR "%s\n", row);
    const char *p = zs_test_write("bad.csv", text);
    zs_runs r;
    zs_err e;
    int rc = zs_runs_read(p, &r, &e);
    ZS_ASSERT_INT_EQ(rc, ZS_EINPUT);
    if (rc != ZS_EINPUT)
        return;
    ZS_ASSERT_STR_CONTAINS(e.where, "bad.csv:3");
    char msg[1024];
    zs_err_format(&e, msg, sizeof msg);
    ZS_ASSERT_STR_CONTAINS(msg, want);
    ZS_ASSERT_INT_EQ(zs_err_exit_code(rc), 2);
}

static void test_bad_rows(void)
{
    bad_row("llama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8,,,16847,x",
            "column 15 (model_tflops_gpu)");
    bad_row("llama2-7b,pretrain,eight,128,1,4096,1,1,1,1,fp8,,,16847,776", "column 3 (gpus)");
    bad_row("llama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8,,,-5,776", "column 14 (tokens_s_gpu)");
    bad_row("llama2-7b,pretrain,12,128,1,4096,1,8,1,1,fp8,,,16847,776",
            "do not divide into tp 1 x pp 8");
    bad_row("llama2-7b,pretrain,8,100,1,4096,1,1,1,1,fp8,,,16847,776",
            "global batch 100 does not divide into mbs 1 x dp 8");
    bad_row("../x,pretrain,8,128,1,4096,1,1,1,1,fp8,,,16847,776", "not a model preset name");
    bad_row("llama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp16,,,16847,776", "column 11 (precision)");
    bad_row("llama2-7b,finetune,8,128,1,4096,1,1,1,1,fp8,,,16847,776", "column 2 (task)");
    bad_row("llama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8,some,,16847,776", "column 12 (recompute)");
    bad_row("llama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8,,4,16847,776", "column 13 (zero)");
    bad_row("llama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8,,,,", "neither measurement");
    bad_row("llama2-7b,pretrain,8,128,1,4096,1,4,1,9,fp8,,,16847,776",
            "32 layers are fewer than pp 4 x vp 9 chunks");
    bad_row("llama2-7b,pretrain,8,128,1,4095,1,1,1,1,fp8,,,16847,776", "column 6 (seq)");
    bad_row("llama2-7b,pretrain,8,128,1,4096,0,1,1,1,fp8,,,16847,776", "column 7 (tp)");
    bad_row("llama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8,,,16847", "14 cells");
    bad_row("llama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8,,,16847,776,1", "more than 15 cells");
}

/* Names compare case-insensitively (NeMo's tables print SFT, LoRA, FP8); a
 * well-formed model name without a preset is a row, not a bad file. */
static void test_names(void)
{
    zs_runs r;
    read_two("names.csv",
             HDR "LLAMA2-7B,SFT,8,32,1,4096,1,1,1,1,FP8,Full,,17120,\n"
                 "llama9-7b,LoRA,8,32,1,4096,1,1,1,1,FP8-CS,,,1,\n",
             &r);
    if (r.n == 2) {
        ZS_ASSERT_INT_EQ(r.rows[1].precision, ZS_PREC_FP8_CS);
        ZS_ASSERT_INT_EQ(r.rows[0].task, ZS_TASK_SFT);
        ZS_ASSERT_INT_EQ(r.rows[0].precision, ZS_PREC_FP8);
        ZS_ASSERT_INT_EQ(r.rows[0].recompute, ZS_STEP_RC_FULL);
        ZS_ASSERT_INT_EQ(r.rows[0].no_model, 0);
        ZS_ASSERT_INT_EQ(r.rows[1].task, ZS_TASK_LORA);
        ZS_ASSERT_INT_EQ(r.rows[1].no_model, 1);
        ZS_ASSERT_STR_EQ(r.rows[1].model, "llama9-7b");
    }
    zs_runs_free(&r);
}

static void bad_file(const char *name, const char *text, const char *want)
{
    const char *p = zs_test_write(name, text);
    zs_runs r;
    zs_err e;
    ZS_ASSERT_INT_EQ(zs_runs_read(p, &r, &e), ZS_EINPUT);
    char msg[1024];
    zs_err_format(&e, msg, sizeof msg);
    ZS_ASSERT_STR_CONTAINS(msg, want);
}

static void test_bad_files(void)
{
    bad_file("hdr.csv", "# c\nmodel,task,gpus\n", "hdr.csv:2");
    bad_file("hdr2.csv", "# c\nmodel,task,gpus\n", "not the runs header");
    bad_file("empty.csv", "# only comments\n", "no header line");
    bad_file("norows.csv", HDR, "no runs");
    zs_runs r;
    zs_err e;
    ZS_ASSERT_INT_EQ(zs_runs_read(ZS_TEST_TMP "/does-not-exist.csv", &r, &e), ZS_EINPUT);
}

/* The optional kernels column (torchtitan's runs): its values, empty as
 * fused, torchtitan's recomputation modes, and its bad cells. */
static void test_kernels_column(void)
{
    const char *p = zs_test_write("tt.csv", "model,task,gpus,gbs,mbs,seq,tp,pp,cp,vp,precision,"
                                            "recompute,zero,tokens_s_gpu,model_tflops_gpu,kernels\n"
                                            "llama3-8b,pretrain,64,64,1,8192,1,1,1,1,bf16,"
                                            "selective-op,3,2973,,eager-fused-norm\n"
                                            "llama3-70b,pretrain,64,64,1,8192,1,1,1,1,bf16,"
                                            "selective-layer,3,331,,\n");
    zs_runs r;
    zs_err e;
    ZS_ASSERT_OK(zs_runs_read(p, &r, &e), &e);
    ZS_ASSERT_INT_EQ(r.n, 2);
    ZS_ASSERT_INT_EQ(r.rows[0].recompute, ZS_STEP_RC_OP);
    ZS_ASSERT_INT_EQ(r.rows[0].kernels, ZS_KERN_EAGER_FUSED_NORM);
    ZS_ASSERT_INT_EQ(r.rows[1].recompute, ZS_STEP_RC_LAYER);
    ZS_ASSERT_INT_EQ(r.rows[1].kernels, ZS_KERN_FUSED);
    zs_runs_free(&r);
    /* the schema's 15 columns: fused */
    p = zs_test_write("nok.csv", HDR "llama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8,,,16847,776\n");
    ZS_ASSERT_OK(zs_runs_read(p, &r, &e), &e);
    ZS_ASSERT_INT_EQ(r.rows[0].kernels, ZS_KERN_FUSED);
    zs_runs_free(&r);
    bad_file("kbad.csv",
             "model,task,gpus,gbs,mbs,seq,tp,pp,cp,vp,precision,recompute,zero,tokens_s_gpu,"
             "model_tflops_gpu,kernels\nllama3-8b,pretrain,64,64,1,8192,1,1,1,1,bf16,,3,2973,,"
             "compiled\n",
             "column 16 (kernels): unknown value ('compiled')");
    bad_file("k15.csv",
             "model,task,gpus,gbs,mbs,seq,tp,pp,cp,vp,precision,recompute,zero,tokens_s_gpu,"
             "model_tflops_gpu,kernels\nllama3-8b,pretrain,64,64,1,8192,1,1,1,1,bf16,,3,2973,\n",
             "15 cells, the header has 16");
    bad_file("khdr.csv",
             "model,task,gpus,gbs,mbs,seq,tp,pp,cp,vp,precision,recompute,zero,tokens_s_gpu,"
             "model_tflops_gpu,framework\n",
             "unknown column 'framework'");
}

/* The optional sp column, alone or with kernels in either order: off runs
 * TP with all-reduces; empty or absent is on. */
static void test_sp_column(void)
{
    const char *p = zs_test_write("sp.csv", "model,task,gpus,gbs,mbs,seq,tp,pp,cp,vp,precision,"
                                            "recompute,zero,tokens_s_gpu,model_tflops_gpu,sp,"
                                            "kernels\n"
                                            "gpt3-175b,pretrain,64,64,1,2048,8,8,1,3,bf16,full,1,"
                                            "112.96,,off,\n"
                                            "gpt3-175b,pretrain,64,64,1,2048,8,8,1,3,bf16,"
                                            "selective,1,148.95,,,\n");
    zs_runs r;
    zs_err e;
    ZS_ASSERT_OK(zs_runs_read(p, &r, &e), &e);
    ZS_ASSERT_INT_EQ(r.n, 2);
    ZS_ASSERT_INT_EQ(r.rows[0].sp, 0);
    ZS_ASSERT_INT_EQ(r.rows[1].sp, 1);
    ZS_ASSERT_INT_EQ(r.rows[0].kernels, ZS_KERN_FUSED);
    zs_runs_free(&r);
    p = zs_test_write("nosp.csv", HDR "llama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8,,,16847,776\n");
    ZS_ASSERT_OK(zs_runs_read(p, &r, &e), &e);
    ZS_ASSERT_INT_EQ(r.rows[0].sp, 1);
    zs_runs_free(&r);
    /* the cell's own column number, whatever the order */
    bad_file("spbad.csv",
             "model,task,gpus,gbs,mbs,seq,tp,pp,cp,vp,precision,recompute,zero,tokens_s_gpu,"
             "model_tflops_gpu,sp,kernels\ngpt3-175b,pretrain,64,64,1,2048,8,8,1,3,bf16,full,1,"
             "112.96,,maybe,\n",
             "column 16 (sp): unknown value ('maybe')");
    bad_file("sp2.csv",
             "model,task,gpus,gbs,mbs,seq,tp,pp,cp,vp,precision,recompute,zero,tokens_s_gpu,"
             "model_tflops_gpu,sp,sp\n",
             "repeated column 'sp'");
}

/* More than ZS_RUNS_MAX_ROWS rows are refused at the first row past it. */
static void test_row_bound(void)
{
    const char row[] = "llama2-7b,pretrain,8,128,1,4096,1,1,1,1,fp8,,,16847,776\n";
    size_t n = ZS_RUNS_MAX_ROWS + 1, len = strlen(HDR) + n * strlen(row) + 1;
    char *text = malloc(len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    strcpy(text, HDR);
    char *p = text + strlen(text);
    for (size_t i = 0; i < n; i++, p += strlen(row))
        memcpy(p, row, strlen(row) + 1);
    const char *path = zs_test_write("many.csv", text);
    free(text);
    zs_runs r;
    zs_err e;
    ZS_ASSERT_INT_EQ(zs_runs_read(path, &r, &e), ZS_EINPUT);
    char msg[256];
    zs_err_format(&e, msg, sizeof msg);
    ZS_ASSERT_STR_CONTAINS(msg, "more than 4096 runs");
}

static const zs_test_case cases[] = {
    {"good", test_good},           {"bad_rows", test_bad_rows},
    {"names", test_names},         {"bad_files", test_bad_files},
    {"row_bound", test_row_bound}, {"kernels_column", test_kernels_column},
    {"sp_column", test_sp_column}, {NULL, NULL}};

int main(int argc, char **argv)
{
    static const zs_test_suite suites[] = {{"runs", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
