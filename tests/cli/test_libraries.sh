#!/usr/bin/env bash
# test_libraries.sh EDGEGRAD WORKDIR — the two libraries beside the CLI in its build folder
# (docs/architecture.md, "Libraries"):
#   - libedgegrad_rt (static and shared) holds no compiler: no object of src/compiler/ or of a
#     backend's src/backends/<name>/compile/, no graph JSON loader, pass,
#     placement or lowering function defined or needed; it holds the safetensors codec (its
#     header read and written with jansson, which libedgegrad_rt links for that);
#   - the shared libraries export exactly the public API (EG_API functions of edgegrad.h): all
#     of it for libedgegrad.so, and for libedgegrad_rt.so the part it implements;
#   - eg_run_egp (examples/run_egp.c, linked against the static libedgegrad_rt alone) runs a
#     .egp compiled by the CLI and writes the same bytes as `edgegrad run PROGRAM.egp`, and
#     refuses a graph JSON file with one line (it has no JSON loader).
set -u
exe=$1
work=$2
source "$(dirname "$0")/harness.sh"
build=$(cd "$(dirname "$exe")" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
data=$root/tests/data
rm -rf "$work" && mkdir -p "$work"
rt_a=$build/libedgegrad_rt.a
rt_so=$build/libedgegrad_rt.so
full_so=$build/libedgegrad.so
runner=$build/eg_run_egp

for f in "$rt_a" "$rt_so" "$full_so" "$runner"; do
  if [[ -e $f ]]; then ok; else bad "$f was not built"; fi
done
# ctest passes the build's nm (a cross build's for check-aarch64) and the runner's
# command line (under the emulator there).
nm=${EG_NM:-nm}
run_egp=${EG_RUN_EGP:-$runner}

# 1. no compiler object in the runtime archive
members=$(ar t "$rt_a")
if [[ $(wc -l <<<"$members") -gt 20 ]]; then ok; else bad "libedgegrad_rt.a has only $(wc -l <<<"$members") members"; fi
# the op families' CPU files (src/ops/conv.c, ...) share names with builder files: tell them
# apart by the object path ar keeps in the archive's build folder
cmake_objs=$(find "$build/CMakeFiles/eg_rt_objects.dir" -name '*.o' | sed "s|$build/CMakeFiles/eg_rt_objects.dir/||")
leak=$(grep -E '^src/compiler/|^src/backends/[^/]+/compile/' <<<"$cmake_objs")
if [[ -z $leak ]]; then ok; else bad "compiler objects in libedgegrad_rt: $leak"; fi
if grep -qE '^src/ops/verify\.c\.o$' <<<"$cmake_objs" && grep -qE '^src/program/egp_read\.c\.o$' <<<"$cmake_objs"; then
  ok; else bad "libedgegrad_rt lacks the verifier or the .egp reader"; fi

# 2. no compiler symbol, defined or needed
forbidden='^(eg_pass_|eg_passes_|eg_partition_graph|eg_graph_load_json|eg_htp_builder|eg_htp_lower|eg_htp_input|eg_htp_define|eg_program_build|eg_program_place|eg_egp_write|eg_compile_report_)'
defined=$($nm --defined-only "$rt_a" 2>/dev/null | awk 'NF == 3 {print $3}')
undefined=$($nm --undefined-only "$rt_a" 2>/dev/null | awk '{print $NF}')
hits=$(grep -E "$forbidden" <<<"$defined")
if [[ -z $hits ]]; then ok; else bad "libedgegrad_rt.a defines compiler symbols: $(head -5 <<<"$hits")"; fi
hits=$(grep -E "$forbidden" <<<"$undefined" | sort -u)
if [[ -z $hits ]]; then ok; else bad "libedgegrad_rt.a needs compiler symbols: $(head -5 <<<"$hits")"; fi
if grep -q '^eg_runtime_run$' <<<"$defined" && grep -q '^eg_egp_read$' <<<"$defined"; then ok; else
  bad "nm found no eg_runtime_run / eg_egp_read in libedgegrad_rt.a (is nm reading it?)"; fi

# 3. exports: exactly the EG_API functions
grep -oE '^EG_API [^(]*\b(eg_[a-z0-9_]+)\(' "$root/include/edgegrad.h" | grep -oE 'eg_[a-z0-9_]+\($' | tr -d '(' | sort -u >"$work/api.txt"
# every function the header declares is marked EG_API (else the shared libraries hide it)
unmarked=$(grep -nE '^(const |)[a-z_]+ \*?eg_[a-z0-9_]+\(' "$root/include/edgegrad.h")
if [[ -z $unmarked ]]; then ok; else bad "edgegrad.h declares functions without EG_API: $unmarked"; fi
exports() { $nm -D --defined-only "$1" | awk 'NF == 3 && $2 ~ /[TtWi]/ {print $3}' | sed 's/@.*//' | sort -u; }
exports "$full_so" >"$work/full.txt"
exports "$rt_so" >"$work/rt.txt"
if [[ $(wc -l <"$work/api.txt") -gt 40 ]]; then ok; else bad "found only $(wc -l <"$work/api.txt") EG_API functions in edgegrad.h"; fi
extra=$(comm -13 "$work/api.txt" "$work/full.txt")
missing=$(comm -23 "$work/api.txt" "$work/full.txt")
if [[ -z $extra && -z $missing ]]; then ok; else bad "libedgegrad.so exports beyond the API: [$extra]; API not exported: [$missing]"; fi
extra=$(comm -13 "$work/api.txt" "$work/rt.txt")
if [[ -z $extra ]]; then ok; else bad "libedgegrad_rt.so exports beyond the API: $extra"; fi
for f in eg_model_load_compiled eg_runtime_create eg_runtime_run eg_npy_load eg_version eg_set_log_callback eg_tensor_compare \
    eg_safetensors_load eg_safetensors_save; do
  if grep -qx "$f" "$work/rt.txt"; then ok; else bad "libedgegrad_rt.so does not export $f"; fi
done
for f in eg_model_load eg_compile_report_create eg_model_save_compiled eg_runtime_create_compiled; do
  if grep -qx "$f" "$work/rt.txt"; then bad "libedgegrad_rt.so exports the compiler's $f"; else ok; fi
done

# 4. the runtime-only app runs a program the CLI compiled, byte for byte as the CLI runs it
compile_and_run_egp "$exe" "$data"
mkdir -p "$work/rt_out"
if $run_egp "$work/step.egp" "$work/rt_out" "${pairs[@]}" >"$work/rt.log" 2>&1; then ok; else bad "eg_run_egp: $(cat "$work/rt.log")"; fi
same_as_cli eg_run_egp "$work/rt_out"
$run_egp "$data/tiny_step.json" "$work/rt_out" >"$work/out.txt" 2>"$work/err.txt"
rc=$?
if [[ $rc -eq 1 && $(wc -l <"$work/err.txt") -eq 1 ]] && ! sanitizer "$work/err.txt"; then ok; else
  bad "eg_run_egp on a graph JSON: exit $rc, $(cat "$work/err.txt")"; fi

summary test_libraries
