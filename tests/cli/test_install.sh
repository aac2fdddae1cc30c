#!/usr/bin/env bash
# test_install.sh EDGEGRAD WORKDIR — `cmake --install` of the build folder beside the CLI, and
# apps built against what it installed (README, "Libraries, installing and linking"):
#   - the prefix holds include/edgegrad.h alone, both libraries static and shared, the CLI,
#     edgegrad.pc / edgegrad_rt.pc (version = edgegrad.h's) and the CMake package, no test;
#   - examples/app, copied out of the tree, builds with find_package(edgegrad) against
#     libedgegrad_rt.so and (EDGEGRAD_APP_STATIC) libedgegrad_rt.a; examples/run_egp.c builds
#     with `pkg-config edgegrad_rt`, shared and --static;
#   - each app runs, with LD_LIBRARY_PATH unset, a .egp the CLI compiled and writes the bytes
#     `edgegrad run` writes; the shared ones load libedgegrad_rt.so from the prefix (ldd), the
#     static ones no libedgegrad_rt.so at all;
#   - examples/finetune.c, built by examples/app against libedgegrad (shared and static), trains
#     the demo's first epoch to the weights `edgegrad train` writes, bit for bit.
# A sanitizer build's pc and CMake files add -fsanitize to the app's link themselves. On a cross
# build (EG_CROSS_BUILD, set by CMakeLists.txt) the apps could not run here: skipped, saying so.
set -u
exe=$1
work=$2
source "$(dirname "$0")/harness.sh"
build=$(cd "$(dirname "$exe")" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
data=$root/tests/data
if [[ -n ${EG_CROSS_BUILD:-} ]]; then
  echo "test_install: skipped: cross build (the installed apps cannot run on this machine)"
  exit 0
fi
rm -rf "$work" && mkdir -p "$work"
prefix=$(realpath -m "$work/prefix")
unset LD_LIBRARY_PATH

# 1. the install
if cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1; then ok; else bad "cmake --install: $(tail -5 "$work/install.log")"; fi
headers=$(cd "$prefix/include" 2>/dev/null && find . -type f | sort)
if [[ $headers == ./edgegrad.h ]]; then ok; else bad "installed headers: [$headers], wanted ./edgegrad.h alone"; fi
for f in lib/libedgegrad.a lib/libedgegrad.so lib/libedgegrad_rt.a lib/libedgegrad_rt.so \
         lib/pkgconfig/edgegrad.pc lib/pkgconfig/edgegrad_rt.pc bin/edgegrad \
         lib/cmake/edgegrad/edgegrad-config.cmake lib/cmake/edgegrad/edgegrad-config-version.cmake; do
  if [[ -e $prefix/$f ]]; then ok; else bad "$f not installed"; fi
done
strays=$(find "$prefix" -type f \( -name 'test_*' -o -name 'replay_*' -o -name 'fuzz_*' -o -name 'bench_*' -o -name 'eg_run_egp' -o -name 'eg_finetune' \))
if [[ -z $strays ]]; then ok; else bad "installed test or benchmark files: $strays"; fi
version=$(awk '/^#define EG_VERSION_(MAJOR|MINOR|PATCH) /{v = v (v == "" ? "" : ".") $3} END {print v}' "$root/include/edgegrad.h")
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
for pc in edgegrad edgegrad_rt; do
  got=$(pkg-config --modversion $pc 2>&1)
  if [[ $got == "$version" ]]; then ok; else bad "pkg-config --modversion $pc: '$got', edgegrad.h says $version"; fi
done
# --static: what the archive needs (jansson too: the safetensors header); the shared library
# brings its own
for pc in edgegrad edgegrad_rt; do
  static_libs=$(pkg-config --static --libs $pc)
  for flag in -lopenblas -ljansson -lz -fopenmp -lm; do
    if grep -qw -- "$flag" <<<"$static_libs"; then ok; else bad "pkg-config --static --libs $pc lacks $flag: $static_libs"; fi
  done
  shared_libs=$(pkg-config --libs $pc)
  if grep -q jansson <<<"$shared_libs"; then bad "pkg-config --libs $pc asks for jansson: $shared_libs"; else ok; fi
done

# 2. the apps: CMake (find_package) shared and static, pkg-config shared and static
if cp -r "$root/examples/app" "$root/examples/run_egp.c" "$root/examples/finetune.c" "$work/"; then
  ok; else bad "copying examples/app"; fi
apps=()
for kind in shared static; do
  static=OFF
  [[ $kind == static ]] && static=ON
  if cmake -S "$work/app" -B "$work/app-$kind" -DCMAKE_PREFIX_PATH="$prefix" -DEDGEGRAD_APP_STATIC=$static \
       >"$work/app-$kind.log" 2>&1 && cmake --build "$work/app-$kind" -j1 >>"$work/app-$kind.log" 2>&1; then
    ok; else bad "examples/app ($kind) with find_package: $(tail -15 "$work/app-$kind.log")"; fi
  apps+=("cmake-$kind:$work/app-$kind/run_egp")
done
cc=${CC:-cc}
# shellcheck disable=SC2046  # pkg-config's flags are meant to split
if $cc $(pkg-config --cflags edgegrad_rt) "$work/run_egp.c" $(pkg-config --libs edgegrad_rt) \
     -Wl,-rpath,"$(pkg-config --variable=libdir edgegrad_rt)" -o "$work/pc-shared" >"$work/pc-shared.log" 2>&1; then
  ok; else bad "pkg-config shared build: $(cat "$work/pc-shared.log")"; fi
# --static: the archive instead of the .so (-l:libedgegrad_rt.a), then what it needs
# shellcheck disable=SC2046
if $cc $(pkg-config --cflags edgegrad_rt) "$work/run_egp.c" \
     $(pkg-config --static --libs edgegrad_rt | sed 's/-ledgegrad_rt\b/-l:libedgegrad_rt.a/') \
     -o "$work/pc-static" >"$work/pc-static.log" 2>&1; then
  ok; else bad "pkg-config --static build: $(cat "$work/pc-static.log")"; fi
apps+=("pc-shared:$work/pc-shared" "pc-static:$work/pc-static")

# 3. each app runs the program the CLI compiled, byte for byte as `edgegrad run`
compile_and_run_egp "$exe" "$data"
for app in "${apps[@]}"; do
  name=${app%%:*}
  bin=${app#*:}
  if [[ ! -x $bin ]]; then bad "$name: $bin was not built"; continue; fi
  rt_lib=$(ldd "$bin" | awk '$1 ~ /^libedgegrad_rt\.so/ {print $3}')
  [[ -n $rt_lib ]] && rt_lib=$(realpath -m "$rt_lib")
  if [[ $name == *shared ]]; then
    if [[ $rt_lib == "$prefix"/lib/libedgegrad_rt.so* ]]; then ok; else bad "$name loads libedgegrad_rt.so from '$rt_lib', not $prefix/lib"; fi
  else
    if [[ -z $rt_lib ]]; then ok; else bad "$name (static) loads $rt_lib"; fi
  fi
  mkdir -p "$work/out-$name"
  if "$bin" "$work/step.egp" "$work/out-$name" "${pairs[@]}" >"$work/$name.log" 2>&1; then ok; else bad "$name: $(cat "$work/$name.log")"; fi
  same_as_cli "$name" "$work/out-$name"
done

# 4. the fine-tuning app (examples/finetune.c, libedgegrad's trainer) built both ways trains
#    the demo's first epoch as `edgegrad train` does, bit for bit
stem=$root/examples/digits_step
/usr/bin/python3 "$root/scripts/digits_data.py" "$work/digits59" >/dev/null || bad "digits data"
$exe train "$stem.json" --eval "$stem.eval.json" --data "$work/digits59" --val-split 0.25 \
  --init "$stem.init.safetensors" --epochs 1 --optimizer adam --lr 0.01 --seed 1 -q \
  --out "$work/cli_tuned.safetensors" 2>"$work/cli_tuned.err" || bad "train: $(cat "$work/cli_tuned.err")"
for kind in shared static; do
  bin=$work/app-$kind/finetune
  if [[ ! -x $bin ]]; then bad "finetune ($kind) was not built"; continue; fi
  if "$bin" "$stem.json" "$stem.eval.json" "$work/digits59" "$stem.init.safetensors" \
       "$work/app_tuned_$kind.safetensors" 1 >"$work/finetune-$kind.log" 2>&1; then ok; else
    bad "finetune ($kind): $(cat "$work/finetune-$kind.log")"; fi
  same_weights "finetune ($kind)" "$work/cli_tuned.safetensors" "$work/app_tuned_$kind.safetensors"
done

summary test_install
