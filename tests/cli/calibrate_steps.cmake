# `calibrate` on training step times: fit the compute-time scale on the measured Llama 3.1 405B
# step (NVIDIA DGX H100, Megatron-Bridge), check the profile is byte-identical when rerun, that
# `train --calibration` reproduces the fitted step, and predict the held-out Llama 3 70B step
# (a different model and layout) within 10% of its measured 10.23 s (the catalog alone gives
# 12.65 s, +24%: outside; the fit gives 10.69 s, +4.5%; docs/models/calibration.md).
#   -DBIN=<clustertwin> -DFIT=<csv> -DWORKDIR=<dir>
set(profile ${WORKDIR}/calibrate_steps_profile.yaml)
set(cluster hgx-h100*128)
include(${CMAKE_CURRENT_LIST_DIR}/run_verb.cmake)

file(REMOVE ${profile} ${WORKDIR}/calibrate_steps.html ${WORKDIR}/calibrate_steps.json)
ct_run(summary 0 calibrate --cluster ${cluster} --stack megatron-bridge ${FIT} --out ${profile}
       --report ${WORKDIR}/calibrate_steps.html --json ${WORKDIR}/calibrate_steps.json)
message(STATUS "${summary}")
# The report: measured vs predicted per run, the parameter, what is not fitted.
file(READ ${WORKDIR}/calibrate_steps.html page)
foreach(want "Training step times on h100" "dgx_h100_405b_step.csv:2 llama3.1-405b"
        "training.compute_scale" "training.host_time_s")
  string(FIND "${page}" "${want}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "the report lacks '${want}'")
  endif()
endforeach()
file(READ ${WORKDIR}/calibrate_steps.json json)
string(JSON json_scale GET "${json}" training compute_scale)
string(JSON json_measured GET "${json}" training runs 0 measured_s)
if(NOT json_measured EQUAL 14.03 OR json_scale LESS 0.25 OR json_scale GREATER 4)
  message(FATAL_ERROR "--json: compute_scale ${json_scale}, measured ${json_measured}")
endif()
file(READ ${profile} first)
ct_run(again 0 calibrate --cluster ${cluster} --stack megatron-bridge ${FIT} --out ${profile})
file(READ ${profile} second)
if(NOT first STREQUAL second)
  message(FATAL_ERROR "the profile differs when rerun")
endif()
string(FIND "${first}" "compute_scale:" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "the profile has no compute_scale:\n${first}")
endif()

# The fitted run: train with the profile gives the measured 14.03 s within 1%.
ct_run(fitted 0 train --cluster ${cluster} --gpus 1024 --model llama3.1-405b --tp 8 --pp 8 --cp 2
       --vpp 8 --global-batch 512 --seq-len 8192 --precision fp8 --calibration ${profile} --json -)
string(JSON fitted_step GET "${fitted}" training step_time_s)
string(JSON notes GET "${fitted}" training notes)
string(FIND "${notes}" "compute-time scale" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "the notes do not name the compute-time scale: ${notes}")
endif()
if(fitted_step LESS 13.89 OR fitted_step GREATER 14.17)
  message(FATAL_ERROR "fitted run: ${fitted_step} s, measured 14.03 s (1% tolerance)")
endif()

# The held-out run: Llama 3 70B on 64 GPUs, measured 10.23 s (1602 tokens/s/GPU).
ct_run(held 0 train --cluster ${cluster} --gpus 64 --model llama3.1-70b --tp 4 --pp 8 --vpp 5
       --global-batch 128 --seq-len 8192 --precision fp8 --calibration ${profile} --json -)
string(JSON held_step GET "${held}" training step_time_s)
message(STATUS "fitted run ${fitted_step} s (measured 14.03); held-out ${held_step} s (measured 10.23)")
if(held_step LESS HELD_MIN OR held_step GREATER HELD_MAX)
  message(FATAL_ERROR "held-out run: ${held_step} s, expected within [${HELD_MIN}, ${HELD_MAX}] s")
endif()
