/* fuzz_cli_main.c — the CLI's src/cli/main.c for the fuzz targets that drive the CLI's own code
 * (fuzz_npz, fuzz_checkpoint, fuzz_train_args) and for unit/test_cli_options, which reads its
 * option tables: compiled with its main() renamed, so that libFuzzer's main, or
 * replay_main.c's, or the test's, is the program's, while fail(), fail_status(), load_model()
 * and the other helpers the CLI's files share are the CLI's very own. The other CLI sources
 * are compiled as they are (CMakeLists.txt, "fuzzing"). */
int edgegrad_cli_main(int argc, char **argv);
#define main edgegrad_cli_main
#include "cli/main.c"
