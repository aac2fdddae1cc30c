# edgegrad — top-level entry points. The two quick-start commands:
#   make demo    build, then fine-tune the bundled pretrained CNN on real digits (first step
#                checked against PyTorch's values, validation accuracy, curves, weights)
#   make fed-demo  federated fine-tuning on Flower: 20 virtual clients (CPU and SM8650), each
#                training its Dirichlet share of the digits with edgegrad (docs/federated.md)
#   make check   build (release and ASan+UBSan) and run every test, PyTorch conformance included
#   make fuzz    libFuzzer on the file readers for FUZZ_TIME seconds each (needs clang)
#   make fuzz-smoke     the same build, each target run for FUZZ_SMOKE_TIME seconds (CI)
#   make check-aarch64  cross-build for ARM64 and run the unit, CLI and op tests under qemu
#   make htp-check      every NPU partition checked on Qualcomm's HTP backend (QNN's emulator)
#   make bench-steps    whole training steps, edgegrad beside PyTorch at its best (bench/README.md)
#   make mutants        apply each realistic bug of tests/mutants/*.patch in a copy of the tree
#                       (build-mutants/) and check that the tests it names fail (MUTANTS=a,b)
# `make` alone builds the CLI at build/edgegrad. Each target installs missing Debian packages
# first (scripts/install-deps.sh; needs root when something is missing).

# cmake --build runs make in the build folders: keep their "Entering directory" lines out.
MAKEFLAGS  += --no-print-directory

BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_BUILD ?= build-fuzz
AARCH64_BUILD ?= build-aarch64
FUZZ_TIME  ?= 600
FUZZ_JOBS  ?= 1
FUZZ_SMOKE_TIME ?= 10

.PHONY: all deps test-deps configure demo fed-demo check check-asan check-aarch64 models htp-check bench bench-steps fuzz mutants clean

all: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

deps:
	@scripts/install-deps.sh build

test-deps:
	@scripts/install-deps.sh test

demo: all
	@scripts/install-deps.sh demo
	@scripts/demo.sh $(BUILD)/edgegrad

# Federated fine-tuning on Flower (docs/federated.md): needs the test .venv (flwr[simulation],
# PyTorch to export the step). FED_CLIENTS, FED_ROUNDS: the fleet's size and the rounds.
fed-demo: test-deps all
	@FED_OUT=$(BUILD)/fed-demo scripts/fed-demo.sh

check: test-deps all
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@scripts/test-summary.sh $(BUILD)
	@$(MAKE) --no-print-directory check-asan

# Unit, CLI and op tests again under AddressSanitizer + UndefinedBehaviorSanitizer (the
# hostile-input tests must pass with no sanitizer report). The long conformance sweep and
# the PyTorch 2.13 runs (@torch2: the same C code, another exporter) run in the release build
# only.
check-asan: test-deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DEG_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) -E '^conformance$$|@torch2$$'
	@scripts/test-summary.sh $(ASAN_BUILD)

# The torchvision model zoo alone (also part of make check): 12 families x full/head/bias x
# cpu/SM8650/SM8350 under PyTorch 2.13, against a float64 reference (README, "Testing").
models: test-deps all
	@PYTHONPATH=python .venv/bin/python tests/models/run_models.py --edgegrad $(BUILD)/edgegrad \
	  --workdir $(BUILD)/models -j $(JOBS)

# Qualcomm's own HTP stack in the loop (README, "Testing"): every NPU partition of the
# conformance cases (SM8650, SM8550, SM8750) and of the 12 torchvision families x full/head/bias
# (SM8650, batch 2 of 3x64x64) exported as ONNX (edgegrad export-onnx), fed from edgegrad's own
# dumps (run --dump-partitions) to QNN's HTP backend (onnxruntime-qnn's x86 emulation, CPU
# fallback disabled) and ONNX Runtime's CPU: accepted whole, agreeing with edgegrad in fp32 and
# fp16. A table per QNN op kind and per SoC; every partition's row in $(BUILD)/htp-check.json.
# HTP_CHECK_FLAGS: e.g. "--sets families --families resnet18 --regimes head".
htp-check: test-deps all
	@PYTHONPATH=python .venv/bin/python tests/htp/htp_check.py --edgegrad $(BUILD)/edgegrad \
	  --workdir $(BUILD)/htp-check --json $(BUILD)/htp-check.json -j $(JOBS) $(HTP_CHECK_FLAGS)

# The conv input-gradient benchmark: edgegrad's NPU path (Transpose + TransposeConv2d on the
# executor) and PyTorch's convolution_backward side by side, 1 and 2 threads, with ratios.
bench: test-deps all
	@cmake --build $(BUILD) --target bench_htp_dgrad -j $(JOBS)
	@/usr/bin/python3 bench/bench_dgrad.py $(BUILD)/bench_htp_dgrad

# Whole training steps: edgegrad (CPU path on the .json, and the SM8650 .egp) beside PyTorch 2.13
# eager NCHW, eager channels_last and torch.compile (inductor; every case unless --torch-compile
# small|none), in interleaved rounds: ResNet-18 / MobileNetV2 / SqueezeNet 1.1 /
# EfficientNet-B0 x full/head/bias and three 32x32 nets, 1 and 2 threads, with medians, spread,
# ratios to PyTorch's best, peak RSS and compile times (bench/README.md). BENCH_STEPS_FLAGS: e.g.
# "--cases resnet18:full,cifar_cnn:full --threads 1 --reps 3".
bench-steps: test-deps all
	@cmake --build $(BUILD) --target bench_step -j $(JOBS)
	@PYTHONPATH=python .venv/bin/python bench/bench_steps.py --edgegrad $(BUILD)/edgegrad \
	  --bench-step $(BUILD)/bench_step --workdir $(BUILD)/bench-steps $(BENCH_STEPS_FLAGS)

# The fuzz targets (tests/fuzz, README "Fuzzing"): built with clang, libFuzzer, ASan and UBSan
# (asserts on, -O1), the seed corpus made from tests/data, then each target run for FUZZ_TIME
# seconds (FUZZ_JOBS at a time), printing its executed inputs and coverage. A crash is saved in
# tests/fuzz/crashes/<target>/ (then replayed by make check) and fails this target. FUZZ_FLAGS
# adds libFuzzer flags (e.g. FUZZ_FLAGS="-fork=1 -ignore_crashes=1" keeps going past a crash);
# FUZZ_TARGETS="npz checkpoint" runs only those (default: every target CMakeLists.txt lists).
fuzz:
	@scripts/install-deps.sh fuzz
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
	  -DEG_FUZZ=ON -DEG_SANITIZE=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_targets
	@FUZZ_FLAGS="$(FUZZ_FLAGS)" FUZZ_TARGETS="$(FUZZ_TARGETS)" \
	  tests/fuzz/run_fuzz.sh $(FUZZ_BUILD) $(FUZZ_TIME) $(FUZZ_JOBS)

# CI's check of the fuzz targets (.ci/run): `make fuzz` for FUZZ_SMOKE_TIME seconds a target. A
# target that no longer builds with clang and libFuzzer, or a finding, fails it.
.PHONY: fuzz-smoke
fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZ_TIME=$(FUZZ_SMOKE_TIME)

# The ARM64 build (README, "Testing"): cross-compiled with Debian's gcc-aarch64-linux-gnu
# against the arm64 jansson and OpenBLAS (cmake/aarch64-linux-gnu.cmake), then the unit, CLI,
# fuzz-replay and op tests (PyTorch 1.13 on the host, the arm64 CLI through
# $(AARCH64_BUILD)/edgegrad-run) under qemu-aarch64, on one OpenMP thread: qemu-user 7.2
# (Debian 12) hung here when a guest started a second thread. AARCH64_SKIP: the unit tests that ask
# for two threads themselves, and cli/test_loss_scale and cli/test_finetune, whose demo
# fine-tunes (three; eighteen epochs) would not end in qemu's 900 s (README).
AARCH64_SKIP ?= unit/test_htp_tconv_pieces|unit/test_kernels_reduce|unit/test_kernels_conv_threads|unit/test_htp_kernels_threads|cli/test_loss_scale|cli/test_finetune
check-aarch64: test-deps
	@scripts/install-deps.sh aarch64
	@cmake -S . -B $(AARCH64_BUILD) --no-warn-unused-cli \
	  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(AARCH64_BUILD) -j $(JOBS)
	@cd $(AARCH64_BUILD) && OMP_NUM_THREADS=1 ctest --output-on-failure -j $(JOBS) --timeout 900 \
	  -R '^(unit|cli|fuzz|ops)/' -E '@torch2$$|^($(AARCH64_SKIP))$$'
	@scripts/test-summary.sh $(AARCH64_BUILD)

# Mutation testing (README, "Testing"): tests/mutants/run_mutants.sh builds a copy of the tree
# in build-mutants/ (release, and Debug + EG_SANITIZE=ON for "# build: asan" mutants), checks
# that each mutant's tests pass unmutated, then applies each patch in turn and requires those
# tests to fail. MUTANTS=name1,name2 runs some; exits non-zero if a mutant survived or is stale.
mutants: test-deps
	@JOBS=$(JOBS) tests/mutants/run_mutants.sh $(MUTANTS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(AARCH64_BUILD) build-mutants
