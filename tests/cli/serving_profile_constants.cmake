# A profile's serving: mapping carries the serving step model's constants of its software stack
# (issue 16; calibration/serving_fit.h): one that sets tp_overlap moves `serve`'s output and says
# so in the notes; the built-in profile of the cluster's GPU carries the catalog's constants
# (catalog/calibration/serving.yaml) and leaves the output byte-identical, given as a flag or as
# a scenario file's `calibration:`.
#   -DBIN=<clustertwin> -DWORKDIR=<dir>
include(${CMAKE_CURRENT_LIST_DIR}/run_verb.cmake)

# Llama 3.1 8B at TP2 on two H100s: two TP all-reduces per layer, of which tp_overlap hides a part.
set(serve_args serve --cluster hgx-h100*1 --gpus 2 --model llama3.1-8b --tp 2 --isl 1024
    --osl 128 --precision fp8 --requests 200 --scenario offline)
ct_run(plain 0 ${serve_args} --json -)
ct_run(builtin 0 ${serve_args} --calibration h100 --json -)
if(NOT plain STREQUAL builtin)
  message(FATAL_ERROR "serve --calibration h100 (the built-in profile) changed the output:\n"
          "${plain}\n---\n${builtin}")
endif()
file(WRITE ${WORKDIR}/serving_constants_profile.yaml
"# A profile of another software stack's serving constants: no fused GEMM + all-reduce.
serving:
  gpu: h100
  tp_overlap: 0
")
ct_run(moved 0 ${serve_args} --calibration ${WORKDIR}/serving_constants_profile.yaml --json -)
string(JSON before GET "${plain}" inference tokens_per_s_per_gpu)
string(JSON after GET "${moved}" inference tokens_per_s_per_gpu)
message(STATUS "tokens/s per GPU: ${before} with the catalog's tp_overlap, ${after} with 0")
if(NOT after LESS before)
  message(FATAL_ERROR "tp_overlap 0 (nothing hidden) gave ${after} tokens/s per GPU, not below "
          "the catalog's ${before}")
endif()
string(JSON notes GET "${moved}" inference notes)
string(FIND "${notes}" "serving step constants tp_overlap 0 (calibration profile" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "the notes do not name the profile's constant: ${notes}")
endif()
# A scenario file's workload.inference takes the built-in profile as `calibration:` alike.
foreach(cal "" "    calibration: h100\n")
  file(WRITE ${WORKDIR}/serving_constants_scenario.yaml
"cluster: hgx-h100*1
workload:
  inference:
    model: llama3.1-8b
    gpus: 2
    tp: 2
    isl: 1024
    osl: 128
    precision: fp8
    requests: 200
    scenario: offline
${cal}")
  ct_run(run 0 run ${WORKDIR}/serving_constants_scenario.yaml --no-report --json -)
  string(JSON tokens GET "${run}" inference tokens_per_s_per_gpu)
  if(NOT tokens EQUAL before)
    message(FATAL_ERROR "scenario with '${cal}': ${tokens} tokens/s per GPU, serve gave ${before}")
  endif()
endforeach()
