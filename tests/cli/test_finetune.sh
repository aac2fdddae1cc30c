#!/usr/bin/env bash
# test_finetune.sh EDGEGRAD WORKDIR — the trainer as a library: examples/finetune.c (an app of
# eg_trainer fed from its own memory) and `edgegrad train` (a shell over the same trainer) give
# bit-identical weights on the bundled demo (examples/digits_step, the digits 5-9), on the CPU
# path (the graph JSON) and on the program compiled for SM8650 (fp16 NPU partitions, dynamic
# loss scaling); a checkpoint written by one and resumed by the other continues bit for bit as
# the uninterrupted run; and a trainer that stops after epoch 1 and resumes equals one run.
set -u
exe=$1
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "$0")/harness.sh"
app=${EG_FINETUNE:?EG_FINETUNE: the example app examples/finetune.c built}
stem=$root/examples/digits_step

/usr/bin/python3 "$root/scripts/digits_data.py" "$work/digits59" >/dev/null || bad "digits data"
$exe compile "$stem.json" --soc SM8650 -o "$work/step.egp" >/dev/null 2>&1 || bad "compile step"
$exe compile "$stem.eval.json" --soc SM8650 -o "$work/eval.egp" >/dev/null 2>&1 || bad "compile eval"

# the demo's settings, as the app fixes them
train() { # STEP EVAL EPOCHS OUT [args...]
  local step=$1 eval=$2 epochs=$3 out=$4
  shift 4
  $exe train "$step" --eval "$eval" --data "$work/digits59" --val-split 0.25 \
    --init "$stem.init.safetensors" --epochs "$epochs" --optimizer adam --lr 0.01 --seed 1 \
    --out "$out" -q "$@"
}

for path in cpu SM8650; do
  if [[ $path == cpu ]]; then step=$stem.json eval=$stem.eval.json; else
    step=$work/step.egp eval=$work/eval.egp; fi
  d=$work/$path
  mkdir -p "$d"
  # uninterrupted: 2 epochs by each
  if train "$step" "$eval" 2 "$d/cli.safetensors" 2>"$d/cli.err"; then ok; else
    bad "$path: edgegrad train: $(cat "$d/cli.err")"; fi
  if $app "$step" "$eval" "$work/digits59" "$stem.init.safetensors" "$d/app.safetensors" 2 \
       >"$d/app.log" 2>&1; then ok; else bad "$path: finetune: $(cat "$d/app.log")"; fi
  same_weights "$path: finetune against edgegrad train" "$d/cli.safetensors" "$d/app.safetensors"
  # the CLI's checkpoint after epoch 1, resumed by the app
  train "$step" "$eval" 1 "$d/cli1.safetensors" --checkpoint "$d/ck" 2>"$d/ck.err" ||
    bad "$path: edgegrad train --checkpoint: $(cat "$d/ck.err")"
  if $app "$step" "$eval" "$work/digits59" "$stem.init.safetensors" "$d/app_resumed.safetensors" \
       2 "$d/ck/checkpoint.safetensors" resume >"$d/resume.log" 2>&1; then ok; else
    bad "$path: finetune resume: $(cat "$d/resume.log")"; fi
  same_weights "$path: the app resuming the CLI's checkpoint" "$d/cli.safetensors" \
    "$d/app_resumed.safetensors"
  # the app's checkpoint after epoch 1, resumed by the CLI
  $app "$step" "$eval" "$work/digits59" "$stem.init.safetensors" "$d/app1.safetensors" 1 \
    "$d/app_ck.safetensors" >"$d/app1.log" 2>&1 || bad "$path: finetune 1 epoch: $(cat "$d/app1.log")"
  mkdir -p "$d/ck2" && cp "$d/app_ck.safetensors" "$d/ck2/checkpoint.safetensors"
  if train "$step" "$eval" 2 "$d/cli_resumed.safetensors" --checkpoint "$d/ck2" --resume \
       2>"$d/cli_resume.err"; then ok; else bad "$path: edgegrad train --resume: $(cat "$d/cli_resume.err")"; fi
  same_weights "$path: the CLI resuming the app's checkpoint" "$d/cli.safetensors" \
    "$d/cli_resumed.safetensors"
  # one epoch is not two: the comparison can fail
  if cmp -s <(tail -c 4096 "$d/cli1.safetensors") <(tail -c 4096 "$d/cli.safetensors"); then
    bad "$path: the weights after 1 and 2 epochs are the same bytes"; else ok; fi
done
# --init defaults to the exporter's STEM.init.safetensors beside the step
if $exe train "$stem.json" --eval "$stem.eval.json" --data "$work/digits59" --val-split 0.25 \
     --epochs 2 --optimizer adam --lr 0.01 --seed 1 --out "$work/default_init.safetensors" \
     >"$work/default_init.log" 2>&1; then ok; else bad "train without --init: $(cat "$work/default_init.log")"; fi
grep -qF "train: --init $stem.init.safetensors" "$work/default_init.log" && ok ||
  bad "train without --init does not say which weights it read: $(head -3 "$work/default_init.log")"
same_weights "the default --init" "$work/cpu/cli.safetensors" "$work/default_init.safetensors"
# the CPU path and the SM8650 program do train differently (fp16 partitions, loss scaling)
if cmp -s <(tail -c 4096 "$work/cpu/cli.safetensors") <(tail -c 4096 "$work/SM8650/cli.safetensors"); then
  bad "the CPU path and the SM8650 program gave the same bytes"; else ok; fi

summary test_finetune
