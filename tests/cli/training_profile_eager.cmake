# A profile's serving: mapping carries the software stack's eager issue time per decoder layer
# (eager_host_per_layer_s, issue 16): the training step's eager issue takes serving.yaml's figure
# (docs/models/training.md, "Host issue"), so train and search take the profile's in its place and
# say so in the notes; the built-in profile of the cluster's GPU leaves the step unchanged.
#   -DBIN=<clustertwin> -DWORKDIR=<dir>
include(${CMAKE_CURRENT_LIST_DIR}/run_verb.cmake)

# Llama 3.1 8B at TP8, micro-batch 1 of 1,024 tokens, eager PyTorch: short kernels, so the GPU
# waits for a slow host issue.
set(train_args train --cluster hgx-h100*1 --model llama3.1-8b --tp 8 --micro-batch 1
    --seq-len 1024 --global-batch 8 --cuda-graphs none)
ct_run(plain 0 ${train_args} --json -)
ct_run(builtin 0 ${train_args} --calibration h100 --json -)
string(JSON base_step GET "${plain}" training step_time_s)
string(JSON builtin_step GET "${builtin}" training step_time_s)
if(NOT base_step EQUAL builtin_step)
  message(FATAL_ERROR "train --calibration h100 (the built-in profile) moved the step: "
          "${base_step} s -> ${builtin_step} s")
endif()
file(WRITE ${WORKDIR}/eager_profile.yaml
"# A profile of another software stack: a slow eager issue, 20 ms per decoder layer (shaped as
# calibrate writes a serving profile: the collective lines stay the catalog's).
collectives:
  name: slow-eager
  gpus: [h100]
serving:
  gpu: h100
  eager_host_per_layer_s: 0.02
")
foreach(verb_args "${train_args}" "search;--cluster;hgx-h100*1;--model;llama3.1-8b;--seq-len;1024;--global-batch;8")
  list(GET verb_args 0 verb)
  ct_run(moved 0 ${verb_args} --calibration ${WORKDIR}/eager_profile.yaml --json -)
  if(verb STREQUAL "train")
    string(JSON step GET "${moved}" training step_time_s)
    message(STATUS "train step: ${base_step} s with the catalog's eager issue, ${step} s with 20 ms/layer")
    # 8 micro-batches x 32 layers x 20 ms forward and as long backward: the host issues for at
    # least 10.24 s per step (the catalog's 1.1 ms per layer leaves the step at ~0.6 s).
    if(step LESS 10.24)
      message(FATAL_ERROR "a 20 ms eager issue per layer gave a ${step} s step (expected >= 10.24 s)")
    endif()
    string(JSON notes GET "${moved}" training notes)
    string(FIND "${notes}" "eager issue per decoder layer 20 ms" pos)
    if(pos EQUAL -1)
      message(FATAL_ERROR "the notes do not name the profile's eager issue: ${notes}")
    endif()
  endif()
endforeach()
# Fitted on another GPU: refused, naming both.
ct_run(other 2 train --cluster hgx-b200*1 --model llama3.1-8b --tp 8
       --calibration ${WORKDIR}/eager_profile.yaml)
string(FIND "${other_err}" "fitted the serving model on h100; this cluster's GPU is b200" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "another GPU's profile: expected the two GPUs named, got: ${other_err}")
endif()
